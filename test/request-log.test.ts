// The request log and /metrics of a spawned server name the route a request was for even when a step before the
// route refused it (a bad token, 405, 415, malformed JSON, 429), and the log has the address the request came
// from, with the caller a trusted proxy forwarded for (TRUSTED_PROXIES) beside it. The start line says where
// the data is, on PostgreSQL too (host, port and database; never the password).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newDatabase } from './support/postgres.js';
import { exitOf, spawnServer } from './support/process.js';

test('refused before its route ran, a request is still logged and counted under the route it was for', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-request-log-'));
  const env = { PORT: '0', DATA_DIR: dataDir, LOG: 'on', RATE_LIMIT: '1', RATE_LIMIT_BURST: '3' };
  const server = await spawnServer({ ...env, TRUSTED_PROXIES: '127.0.0.1' });
  try {
    const send = (path: string, forwardedFor: string, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, {
        ...init,
        headers: { ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}), ...init.headers },
      }).then((r) => r.status);
    const group = '/iam/v2/groups/0123456789abcdef0123456789abcdef01234567';
    const json = { 'content-type': 'application/json' };
    assert.is(await send('/iam/v2/groups', '', { headers: { authorization: 'Bearer not.a.token' } }), 401);
    assert.is(await send(group, '198.51.100.1', { method: 'PUT' }), 405);
    assert.is(await send('/iam/v2/groups', '198.51.100.2', { method: 'POST', body: 'x' }), 415);
    assert.is(await send('/iam/v2/groups', '198.51.100.3', { method: 'POST', headers: json, body: '{' }), 400);
    const limited: number[] = [];
    for (let i = 0; i < 6; i++) limited.push(await send('/iam/v2/groups', '198.51.100.4, 10.0.0.1'));
    assert.ok(limited.includes(429), String(limited));
    assert.is(await send('/no/such/path', '198.51.100.5'), 404);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    server.child.kill('SIGTERM');
    assert.is(await exitOf(server.child), 0, server.output());

    const requests = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.method);
    const seen = (status: number) => requests.find((l) => l.status === status);
    assert.equal(
      [401, 405, 415, 400, 429, 404].map((status) => [status, seen(status)?.route, seen(status)?.forwardedFor]),
      [
        [401, '/iam/v2/groups', undefined],
        [405, '/iam/v2/groups/*', '198.51.100.1'],
        [415, '/iam/v2/groups', '198.51.100.2'],
        [400, '/iam/v2/groups', '198.51.100.3'],
        // The rightmost hop not a trusted proxy: 10.0.0.1 is not one, so it is the caller.
        [429, '/iam/v2/groups', '10.0.0.1'],
        [404, '(none)', '198.51.100.5'],
      ],
      JSON.stringify(requests),
    );
    for (const line of requests) assert.is(line.address, '127.0.0.1', JSON.stringify(line));
    for (const [status, route] of <[number, string][]>[
      [401, '/iam/v2/groups'],
      [405, '/iam/v2/groups/*'],
      [415, '/iam/v2/groups'],
      [400, '/iam/v2/groups'],
      [429, '/iam/v2/groups'],
    ])
      assert.match(
        metrics,
        new RegExp(`^http_requests_total\\{[^}]*route="${route.replace('*', '\\*')}"[^}]*status="${status}"`, 'm'),
        `${status} ${route}`,
      );
  } finally {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('without TRUSTED_PROXIES, X-Forwarded-For is not believed: the log has the connection address alone', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-request-log-'));
  const server = await spawnServer({ PORT: '0', DATA_DIR: dataDir, LOG: 'on' });
  try {
    await fetch(`${server.url}/iam/v2/groups`, { headers: { 'x-forwarded-for': '198.51.100.7' } });
    server.child.kill('SIGTERM');
    assert.is(await exitOf(server.child), 0, server.output());
    const line = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((l) => l.method);
    assert.equal(
      [line.status, line.route, line.address, line.forwardedFor],
      [401, '/iam/v2/groups', '127.0.0.1', undefined],
    );
  } finally {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('the start line names the database: the SQLite file, or PostgreSQL host, port and database', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-request-log-'));
  const url = new URL(await newDatabase());
  url.password = 'not-to-be-shown';
  try {
    for (const [env, where] of [
      [{}, join(dataDir, 'platform.sqlite')],
      [{ DATABASE_URL: url.toString() }, `PostgreSQL ${url.hostname}:${url.port}${url.pathname}`],
    ] as const) {
      const server = await spawnServer({ PORT: '0', DATA_DIR: dataDir, LOG: 'off', ...env });
      server.child.kill('SIGTERM');
      await exitOf(server.child);
      assert.match(server.output(), `(HTTP and gRPC; data in ${where})\n`);
      assert.not.match(server.output(), 'not-to-be-shown');
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
