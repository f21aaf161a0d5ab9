// runtime/http/context.ts on a real node:http server: an answer whose headers cannot be written as a route set them
// is a 500 in JSON (never a connection closed without an answer), an answer without a body says Content-Length: 0,
// and a fault answer is never kept by a cache.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createApp } from '../runtime/http/app.js';
import { Router } from '../runtime/http/router.js';

async function withApp(
  routes: Router,
  fn: (url: string) => Promise<void>,
  log: (line: Record<string, unknown>) => void = () => {},
): Promise<void> {
  const app = createApp({
    model: { domains: ['t'], service: 'test' } as never,
    openapi: {},
    log,
    issuer: () => ({ issuer: 'http://test' }) as never,
    authenticate: async () => ({}),
    publicRoutes: [],
    routes: [{ router: routes }],
  });
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

test('a header value Node refuses is a 500 in JSON, not a connection closed without an answer', async () => {
  const routes = new Router().get('/t/v2/bad', (ctx) => {
    ctx.set('X-Name', 'caf\u20ac'); // not Latin-1: Node refuses it
    ctx.body = { ok: true };
  });
  await withApp(routes, async (url) => {
    const res = await fetch(`${url}/t/v2/bad`).catch((e: unknown) => e);
    assert.ok(res instanceof Response, `an answer, not ${String((res as Error)?.cause ?? res)}`);
    assert.is(res.status, 500);
    assert.ok(res.headers.get('x-request-id'));
    assert.is((await res.json()).code, 13);
  });
});

test('an answer with no body that is not 204/304 has Content-Length: 0, not a chunked empty body', async () => {
  const routes = new Router().get('/t/v2/empty', () => {});
  await withApp(routes, async (url) => {
    const res = await fetch(`${url}/t/v2/empty`);
    assert.is(res.status, 200);
    assert.is(res.headers.get('content-length'), '0');
    assert.is(res.headers.get('transfer-encoding'), null);
  });
});

test('a body JSON cannot hold is a 500 in JSON that no cache keeps, and logged as the 500 it was', async () => {
  const routes = new Router().get('/t/v2/big', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=60');
    ctx.body = { n: 1n };
  });
  const lines: Record<string, unknown>[] = [];
  await withApp(
    routes,
    async (url) => {
      const res = await fetch(`${url}/t/v2/big`);
      assert.is(res.status, 500);
      assert.is(res.headers.get('cache-control'), null);
      const requestId = res.headers.get('x-request-id');
      assert.ok(requestId);
      assert.is((await res.json()).code, 13);
      const line = lines.find((l) => l.requestId === requestId && l.route !== undefined);
      assert.equal([line?.status, line?.level, line?.reason], [500, 'error', 'INTERNAL'], JSON.stringify(lines));
    },
    (line) => lines.push(line),
  );
});

test('a log that throws on a request line leaves the answer as it was and the server serving', async () => {
  const routes = new Router()
    .get('/t/v2/now', (ctx) => {
      ctx.body = { now: true };
    })
    .get('/t/v2/later', async (ctx) => {
      await new Promise((r) => setTimeout(r, 5));
      ctx.body = { later: true };
    });
  const failing = (line: Record<string, unknown>) => {
    if (line.route !== undefined) throw new Error('the log cannot take the line');
  };
  await withApp(
    routes,
    async (url) => {
      for (let i = 0; i < 2; i++)
        for (const path of ['now', 'later']) {
          const res = await fetch(`${url}/t/v2/${path}`);
          assert.equal([res.status, await res.json()], [200, { [path]: true }], path);
        }
    },
    failing,
  );
});

test.run();
