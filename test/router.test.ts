// runtime/router.ts and runtime/http-context.ts on a real node:http server on loopback: table order across the
// first-segment index, captures, HEAD, router-wide middleware, the query, absolute-form targets and the answer.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createApp } from '../runtime/http.js';
import { compose, HttpContext, type Middleware } from '../runtime/http-context.js';
import { Router } from '../runtime/router.js';

const said =
  (what: string): Middleware =>
  (ctx) => {
    ctx.body = { what, captures: ctx.captures, route: String(ctx.route) };
  };

const router = new Router()
  .get(/^\/a\/v2\/things:count$/, said('count'))
  .get(/^\/a\/v2\/things\/([^:]+)$/, said('thing'))
  // No literal first segment: tried for every path, in its place in the table.
  .get(/^\/(a|b)\/v2\/things\/special$/, said('anywhere'))
  .get(/^\/b\/v2\/things\/([^:]+)$/, said('b thing'))
  .get(/^\/ab?c\/opt$/, said('optional'))
  .post('/a/exact', said('exact'));

let server: Server;
let base: string;

test.before(async () => {
  const run = compose([router.routes(), (ctx) => void (ctx.status = 404)]);
  server = createServer((req, res) => {
    const ctx = new HttpContext(req, res);
    void run(ctx).then(() => ctx.respond());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
test.after(() => new Promise<void>((r) => server.close(() => r())));

async function call(method: string, path: string): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(base + path, { method });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined, headers: r.headers };
}

test('the first route in table order answers, whatever the index of first segments', async () => {
  assert.is((await call('GET', '/a/v2/things:count')).body.what, 'count');
  assert.equal((await call('GET', '/a/v2/things/x%2Fy')).body, {
    what: 'thing',
    captures: ['x%2Fy'],
    route: String(/^\/a\/v2\/things\/([^:]+)$/),
  });
  // /a/v2/things/special: the /a route comes first in the table; /b's is after the route with no fixed segment.
  assert.is((await call('GET', '/a/v2/things/special')).body.what, 'thing');
  assert.is((await call('GET', '/b/v2/things/special')).body.what, 'anywhere');
  assert.is((await call('GET', '/b/v2/things/other')).body.what, 'b thing');
  // A quantified character is not part of the literal start: both first segments match /ab?c.
  assert.is((await call('GET', '/ac/opt')).body.what, 'optional');
  assert.is((await call('GET', '/abc/opt')).body.what, 'optional');
});

test('exact paths match exactly; methods are kept apart; HEAD goes with GET and has no body', async () => {
  assert.is((await call('POST', '/a/exact')).body.what, 'exact');
  assert.is((await call('POST', '/a/exact/')).status, 404);
  assert.is((await call('GET', '/a/exact')).status, 404);
  assert.equal(router.methodsAt('/a/exact'), ['POST']);
  assert.equal(router.methodsAt('/a/v2/things/1'), ['GET', 'HEAD']);
  const head = await call('HEAD', '/a/v2/things/1');
  assert.is(head.status, 200);
  assert.is(head.body, undefined);
  assert.is(head.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.ok(Number(head.headers.get('content-length')) > 0, 'the length of the body GET would send');
});

test('router-wide middleware runs before the route that answers, never when none does', async () => {
  const seen: string[] = [];
  const r = new Router().get('/x', (ctx) => {
    ctx.body = { seen: [...seen] };
  });
  r.use(async (ctx, next) => {
    seen.push(ctx.path);
    await next();
  });
  const ctx = (path: string) => new HttpContext({ method: 'GET', url: path, headers: {} } as never, {} as never);
  const first = ctx('/x');
  await r.routes()(first, async () => undefined);
  assert.equal(first.body, { seen: ['/x'] });
  await r.routes()(ctx('/y'), async () => undefined);
  assert.equal(seen, ['/x']);
});

test('the request target: query parameters (repeated ones as arrays), absolute form, headers', () => {
  const ctx = (url: string, headers: Record<string, string | string[]> = {}) =>
    new HttpContext({ method: 'GET', url, headers } as never, {} as never);
  const q = ctx('/p/v2/x?a=1&b=2&a=3&c=%20d');
  assert.is(q.path, '/p/v2/x');
  assert.equal({ ...q.query }, { a: ['1', '3'], b: '2', c: ' d' });
  const absolute = ctx('http://host.example/p/v2/y?z=1');
  assert.is(absolute.path, '/p/v2/y');
  assert.equal({ ...absolute.query }, { z: '1' });
  assert.equal({ ...ctx('/p').query }, {});
  assert.is(ctx('/p', { 'x-two': ['a', 'b'] }).get('X-Two'), 'a, b');
  assert.is(ctx('/p').get('missing'), '');
});

test('an answer that cannot be written is a logged, structured 500, and the server goes on', async () => {
  const logged: Record<string, unknown>[] = [];
  const routes = new Router()
    .get('/t/v2/bigint', (ctx) => {
      ctx.body = { n: 1n };
    })
    .get('/t/v2/fine', (ctx) => {
      ctx.body = { ok: true };
    });
  const app = createApp({
    model: { domains: ['t'], service: 'test' } as never,
    openapi: {},
    log: (line) => logged.push(line),
    issuer: () => ({ issuer: 'http://test' }) as never,
    authenticate: async () => ({}),
    publicRoutes: [],
    routes: [{ router: routes }],
  });
  const appServer = createServer(app);
  await new Promise<void>((r) => appServer.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`;
  try {
    const bad = await fetch(`${url}/t/v2/bigint`);
    assert.is(bad.status, 500);
    assert.is(bad.headers.get('content-type'), 'application/json; charset=utf-8');
    const body = await bad.json();
    assert.is(body.code, 13);
    assert.not.match(JSON.stringify(body), /BigInt/, 'no detail of the fault reaches the caller');
    assert.ok(
      logged.some((l) => l.level === 'error' && String(l.error).includes('BigInt')),
      'the fault is logged',
    );
    assert.equal(await (await fetch(`${url}/t/v2/fine`)).json(), { ok: true });
  } finally {
    await new Promise<void>((r) => appServer.close(() => r()));
  }
});

test.run();
