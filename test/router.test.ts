// runtime/http/router.ts, runtime/http/route-template.ts and runtime/http/context.ts on a real node:http server on
// loopback: table order across the trie of fixed segments, templates and their captures, HEAD, router-wide middleware, the query, absolute-form targets and the answer.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../runtime/model/errors.js';
import { createApp } from '../runtime/http/app.js';
import { HttpContext, type Middleware } from '../runtime/http/context.js';
import { Router } from '../runtime/http/router.js';

const said =
  (what: string): Middleware =>
  (ctx) => {
    ctx.body = { what, captures: ctx.captures, route: ctx.route?.name };
  };

const router = new Router()
  .get('/a/v2/things:count', said('count'))
  .get('/a/v2/things/{uid*}', said('thing'))
  // A capture in the first segment: no fixed segment, tried for every path, in its place in the table.
  .get('/{domain}/v2/things/special', said('anywhere'))
  .get('/b/v2/things/{uid*}', said('b thing'))
  .post('/a/exact', said('exact'));

let server: Server;
let base: string;

test.before(async () => {
  server = createServer((req, res) => {
    const ctx = new HttpContext(req, res);
    const answered = router.dispatch(ctx);
    if (!answered) ctx.status = 404;
    void Promise.resolve(answered).then(() => ctx.respond());
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

test('the first route in table order answers, whatever the trie of fixed segments', async () => {
  assert.is((await call('GET', '/a/v2/things:count')).body.what, 'count');
  assert.equal((await call('GET', '/a/v2/things/x%2Fy')).body, {
    what: 'thing',
    captures: ['x%2Fy'],
    route: '/a/v2/things/*',
  });
  // /a/v2/things/special: the /a route comes first in the table; /b's is after the route with no fixed segment.
  assert.is((await call('GET', '/a/v2/things/special')).body.what, 'thing');
  assert.is((await call('GET', '/b/v2/things/special')).body.what, 'anywhere');
  assert.is((await call('GET', '/b/v2/things/other')).body.what, 'b thing');
});

/** The template as a regular expression, as routes were given before templates: the plain scan to compare with. */
const patternOf = (template: string) =>
  new RegExp(
    `^${template
      .split(/(\{\w+\*?\})/)
      .map((p, i) => (i % 2 ? (p.endsWith('*}') ? '([^:]+)' : '([^/]+)') : p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')))
      .join('')}$`,
  );

test('the trie and the template matcher find what a scan of regular expressions finds, captures and all', () => {
  const templates = [
    '/r/v2/repos/{uid*}/readme',
    '/r/v2/repos/{uid*}:verb',
    '/r/v2/repos/{repo}/digests/{digest}/size',
    '/r/v2/repos/{uid*}/digests/{digest}/arch',
    '/r/v2/repos/{uid*}',
    '/r/v2/x{n}',
    '/r/v2/files/{name}.json',
    '/r/v2/a{x}b{y*}c',
    '/r/v2/{name}/deep',
    '/{any*}/anywhere',
    '/r/v2/repos',
    '/r',
    '/r/v2/',
    '/r/v3/x/y',
  ];
  const r = new Router();
  for (const t of templates) r.get(t, said(t));
  const paths = [
    '/r/v2/repos/abc/readme',
    '/r/v2/repos/a/b/readme',
    '/r/v2/repos/abc',
    '/r/v2/repos/a/b%2Fc',
    '/r/v2/repos/a:b',
    '/r/v2/repos/a/b:verb',
    '/r/v2/repos/a/b:other',
    '/r/v2/repos/a/digests/sha:1/size',
    '/r/v2/repos/a/b/digests/sha:1/size',
    '/r/v2/repos/a/b/digests/sha:1/arch',
    '/r/v2/repos/a/digests/x/digests/y/arch',
    '/r/v2/repos/a/digests//arch',
    '/r/v2/x1',
    '/r/v2/x',
    '/r/v2/x1/2',
    '/r/v2/files/a.json',
    '/r/v2/files/.json',
    '/r/v2/files/a.b.json',
    '/r/v2/abbc',
    '/r/v2/ab/bbc',
    '/r/v2/axbybzc',
    '/r/v2/abc',
    '/r/v2/abc/deep',
    '/r/v2/repos/deep',
    '/q/anywhere',
    '/q/r/anywhere',
    '/anywhere',
    '/r/v2/repos',
    '/r/v2/reposx',
    '/r',
    '/r/v2',
    '/r/v2/',
    '/r/v2//',
    '/r/v3/x/y',
    '/r/v3/x',
    'r/v2/repos/x',
    '/',
    '',
  ];
  for (const path of paths) {
    const scanned = templates.map((t) => ({ t, m: patternOf(t).exec(path) })).find(({ m }) => m);
    const found = r.find('GET', path);
    assert.equal(
      found && { template: found.route.template, captures: found.captures },
      scanned && { template: scanned.t, captures: scanned.m!.slice(1) },
      path,
    );
  }
});

test('a template two captures could split differently, or not one of the router, is refused when added', () => {
  for (const [template, problem] of [
    ['/r/{a}{b}', 'two captures with no text between them'],
    ['r/v2', 'does not start with "/"'],
    ['/r/{a}/{a*}', 'names a capture twice'],
    ['/r/{a-b}', 'a brace outside'],
    ['/r/{a}}', 'a brace outside'],
  ])
    assert.throws(() => new Router().get(template, said(template)), new RegExp(problem), template);
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
  await r.dispatch(first);
  assert.equal(first.body, { seen: ['/x'] });
  assert.is(r.dispatch(ctx('/y')), undefined);
  assert.equal(seen, ['/x']);
});

/** What the server writes back on one connection for these raw bytes, until it has been quiet for a while. */
function exchange(port: number, bytes: string, quietMs = 300): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      socket.destroy();
      resolve(got);
    };
    socket.on('data', (d) => {
      got += d;
      clearTimeout(timer);
      timer = setTimeout(done, quietMs);
    });
    socket.on('end', done);
    socket.on('error', reject);
    socket.write(bytes);
    timer = setTimeout(done, 2000);
  });
}

test('HTTP/1.0 answers carry their length and keep a kept-alive connection', async () => {
  const port = (server.address() as AddressInfo).port;
  const one = 'GET /a/v2/things/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n';
  const got = await exchange(port, one + one);
  const answers = got.split(/HTTP\/1\.[01] 200 OK/).slice(1);
  assert.is(answers.length, 2, got);
  for (const a of answers) {
    assert.match(a, /content-length: \d+/i);
    assert.match(a, /connection: keep-alive/i);
  }
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
  assert.is(ctx('HTTP://u:p@h:80/a/%2e%2e/b').path, '/a/%2e%2e/b', 'raw, as the origin form would give it');
  assert.is(ctx('http://h').path, '/');
  assert.not.match(ctx('foo://h/healthz').path, /^\/healthz$/, 'another scheme names no route');
  assert.equal(ctx(`/p?${'&'.repeat(1200)}bogus=1`).query.bogus, '1', 'no pair is dropped, however many');
  assert.equal({ ...ctx('/p').query }, {});
  assert.is(ctx('/p', { 'x-two': ['a', 'b'] }).get('x-two'), 'a, b');
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
    })
    .post('/t/v2/fine', (ctx) => {
      ctx.body = { ok: true };
    })
    .post('/t/v2/posted', (ctx) => {
      ctx.body = { ok: true };
    })
    .get('/t/v2/script', (ctx) => {
      ctx.type = 'application/javascript';
      ctx.set('Cache-Control', 'public, max-age=86400');
      throw new ApiError('NOT_FOUND', 'Not found: no script');
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
    // HEAD is told what GET would be: the same status, headers and length, for an unknown path and a wrong method.
    for (const path of ['/t/v2/nowhere', '/t/v2/posted']) {
      const [get, head] = await Promise.all([fetch(`${url}${path}`), fetch(`${url}${path}`, { method: 'HEAD' })]);
      const text = await get.text();
      assert.is(head.status, get.status, path);
      assert.ok(get.status === 404 || get.status === 405, `${path}: ${get.status}`);
      assert.is(head.headers.get('allow'), get.headers.get('allow'), path);
      assert.is(head.headers.get('content-length'), String(Buffer.byteLength(text)), path);
    }
    const refused = await fetch(`${url}/t/v2/script`);
    assert.is(refused.status, 404);
    assert.is(refused.headers.get('content-type'), 'application/json; charset=utf-8', 'an error is JSON');
    assert.is(refused.headers.get('cache-control'), null, 'and never kept by a cache');
    // A client gone mid-body is a refused request, not a fault of the server.
    const port = (appServer.address() as AddressInfo).port;
    await exchange(
      port,
      'POST /t/v2/fine HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
      50,
    );
    await new Promise((r) => setTimeout(r, 100));
    const gone = logged.find((l) => l.method === 'POST');
    assert.is(gone?.status, 400, JSON.stringify(logged));
    assert.is(gone?.level, 'warn');
  } finally {
    await new Promise<void>((r) => appServer.close(() => r()));
  }
});

test.run();
