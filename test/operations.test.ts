// What an operator runs the server with: health and readiness probes, Prometheus metrics, the JSON request log,
// CORS, and the limits on body size and request rate. Real HTTP on loopback.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, readConfig } from '../runtime/operate/config.js';
import { loadGenerated, type GeneratedParts } from '../server/server.js';
import { query } from './support/db.js';
import { grpcClient } from './support/grpc-client.js';
import { exitOf, runScript, spawnServer } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

let generated: GeneratedParts;
let s: TestServer;
test.before(async () => {
  generated = await loadGenerated();
  s = await startTestServer(generated);
});
test.after(async () => s.stop());

const anonymous = { authorization: '' };

test('/healthz and /readyz answer without a token', async () => {
  const alive = await s.call('GET', '/healthz', undefined, anonymous);
  assert.is(alive.status, 200);
  assert.equal(alive.body, { status: 'ok' });
  const ready = await s.call('GET', '/readyz', undefined, anonymous);
  assert.is(ready.status, 200, JSON.stringify(ready.body));
  assert.equal(ready.body, {
    status: 'ok',
    checks: { shutdown: 'ok', database: 'ok', schema: 'ok', events: 'ok' },
  });
  assert.is((await s.call('POST', '/readyz', {}, anonymous)).status, 405);
  assert.is((await s.call('GET', '/healthz?verbose=1', undefined, anonymous)).status, 400);
});

test('/metrics counts requests by route template, never by path, with the rest of the server', async () => {
  const org = await createOrg(s, 'metrics');
  for (let i = 0; i < 3; i++) assert.is((await s.call('GET', `/iam/v2/groups/${org}`)).status, 200);
  await s.call('GET', '/iam/v2/groups', undefined, { authorization: 'Bearer not-a-token' });
  const r = await fetch(`${s.url}/metrics`);
  assert.is(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
  const text = await r.text();
  const line = text
    .split('\n')
    .find((l) => /^http_requests_total\{.*method="GET".*status="200"/.test(l) && /groups/.test(l));
  assert.ok(line, text.slice(0, 2000));
  assert.match(line!, /route="\/iam\/v2\/groups\/\*"/);
  assert.not.ok(text.includes(org), 'no uid in any label');
  assert.match(text, /^http_requests_in_flight 1$/m, 'the scrape itself is the one request in flight');
  for (const name of [
    'http_request_duration_seconds_bucket',
    'http_requests_in_flight',
    'db_statement_duration_seconds_count{kind="read"}',
    'db_statement_duration_seconds_count{kind="write"}',
    'db_write_queue_depth',
    'auth_token_verifications_total{outcome="verified"}',
    'auth_token_verifications_total{outcome="cached"}',
    'auth_token_refusals_total{reason="malformed"}',
    'events_deliveries_total',
    'events_outbox_lag_seconds',
    'process_cpu_user_seconds_total',
  ])
    assert.ok(text.includes(name), name);
});

test('METRICS=token needs CAP_METRICS_READ (the metrics.reader role, bound to the first owner; not in owner); METRICS=off serves no /metrics', async () => {
  const guarded = await startTestServer(generated, { METRICS: 'token' });
  const off = await startTestServer(generated, { METRICS: 'off' });
  try {
    const refused = await guarded.call('GET', '/metrics', undefined, anonymous);
    assert.is(refused.status, 401, JSON.stringify(refused.body));
    assert.is(refused.body.details[0].reason, 'UNAUTHENTICATED');
    const owner = await guarded.call('GET', '/metrics');
    assert.is(owner.status, 200);
    assert.match(owner.body, /http_requests_total/);
    // Owner lists only the reference's capabilities; metrics readers have a role of their own.
    const roles = (await guarded.call('GET', '/iam/v2/roles?page_size=200')).body.roles;
    const role = (name: string) => roles.find((r: { name: string }) => r.name === name);
    assert.not.ok(role('owner').capabilities.includes('CAP_METRICS_READ'));
    assert.equal(role('metrics.reader').capabilities, ['CAP_METRICS_READ']);
    // The metrics role is granted where its granter holds it: the first owner, in the first organization.
    const org = guarded.bootstrap.organization;
    const other = (await guarded.call('POST', `/iam/v2/identities/${org}`, { name: 'ops' })).body.uid;
    const ownerRole = role('owner').uid;
    await guarded.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: other, roleUid: ownerRole });
    const asOther = { authorization: `Bearer ${await guarded.mint(other)}` };
    assert.is((await guarded.call('GET', '/metrics', undefined, asOther)).status, 403, 'an owner of a group alone');
    const bound = await guarded.call('POST', `/iam/v2/roleBindings/${org}`, {
      identityUid: other,
      roleUid: role('metrics.reader').uid,
    });
    assert.is(bound.status, 200, JSON.stringify(bound.body));
    assert.is((await guarded.call('GET', '/metrics', undefined, asOther)).status, 200, 'a metrics reader');
    assert.is((await guarded.call('GET', '/healthz', undefined, anonymous)).status, 200);
    const none = await off.call('GET', '/metrics', undefined, anonymous);
    assert.is(none.status, 404);
  } finally {
    await Promise.all([guarded.stop(), off.stop()]);
  }
});

test('CORS: a preflight and a request from an allowed origin; nothing for another; off by default', async () => {
  const c = await startTestServer(generated, { CORS_ORIGINS: 'https://app.example, http://localhost:3000' });
  try {
    const preflight = await fetch(`${c.url}/iam/v2/groups`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    assert.is(preflight.status, 204);
    assert.is(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/);
    assert.is(preflight.headers.get('access-control-allow-headers'), 'authorization, content-type');
    assert.is(preflight.headers.get('access-control-max-age'), '600');
    assert.match(preflight.headers.get('vary') ?? '', /Origin/);

    const actual = await c.call('GET', '/iam/v2/groups', undefined, { origin: 'https://app.example' });
    assert.is(actual.status, 200);
    assert.is(actual.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.match(actual.headers.get('access-control-expose-headers') ?? '', /x-request-id/);

    const other = { origin: 'https://evil.example', 'access-control-request-method': 'POST' };
    const refusedPreflight = await fetch(`${c.url}/iam/v2/groups`, { method: 'OPTIONS', headers: other });
    assert.is(refusedPreflight.headers.get('access-control-allow-origin'), null);
    assert.is(refusedPreflight.status, 405, 'as OPTIONS is answered without CORS');
    const refused = await c.call('GET', '/iam/v2/groups', undefined, { origin: 'https://evil.example' });
    assert.is(refused.headers.get('access-control-allow-origin'), null);
  } finally {
    await c.stop();
  }
  const plain = await fetch(`${s.url}/iam/v2/groups`, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
  });
  assert.is(plain.status, 405);
  assert.is(plain.headers.get('access-control-allow-origin'), null);
});

test('MAX_BODY_BYTES: a larger body is 413 saying the limit', async () => {
  const small = await startTestServer(generated, { MAX_BODY_BYTES: '2048' });
  try {
    const r = await small.call('POST', '/iam/v2/groups', { name: 'x'.repeat(4096) });
    assert.is(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.message, /larger than 2048 bytes/);
    assert.is((await small.call('POST', '/iam/v2/groups', { name: 'fits' })).status, 200);
  } finally {
    await small.stop();
  }
});

test('RATE_LIMIT: past the burst, 429 RESOURCE_EXHAUSTED with Retry-After; probes are never limited', async () => {
  const limited = await startTestServer(generated, { RATE_LIMIT: '1', RATE_LIMIT_BURST: '3' });
  try {
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 5; i++) {
      last = await limited.call('GET', '/iam/v2/groups');
      statuses.push(last.status);
    }
    assert.equal(statuses.slice(0, 3), [200, 200, 200]);
    assert.is(last!.status, 429, JSON.stringify(last!.body));
    assert.is(last!.body.details[0].reason, 'RESOURCE_EXHAUSTED');
    assert.match(last!.body.message, /more than 1 requests per second from identity /);
    assert.ok(Number(last!.headers.get('retry-after')) >= 1, String(last!.headers.get('retry-after')));
    // Another caller (anonymous: by address) has a bucket of its own; probes take nothing from any.
    assert.is((await limited.call('GET', '/openapi.json', undefined, anonymous)).status, 200);
    for (let i = 0; i < 5; i++) assert.is((await limited.call('GET', '/healthz', undefined, anonymous)).status, 200);
  } finally {
    await limited.stop();
  }
});

test('gRPC calls are counted in /metrics by method and code, and share the HTTP rate limit per identity', async () => {
  const limited = await startTestServer(generated, { RATE_LIMIT: '1', RATE_LIMIT_BURST: '3' });
  const client = grpcClient(limited.url, limited.token);
  try {
    const codes: number[] = [];
    let last;
    for (let i = 0; i < 2; i++) {
      last = await client.call('iam.v2.GroupsService', 'ListGroups', {});
      codes.push(last.code);
    }
    // The third request of the burst over HTTP, the fourth refused over either transport.
    assert.is((await limited.call('GET', '/iam/v2/groups')).status, 200);
    last = await client.call('iam.v2.GroupsService', 'ListGroups', {});
    codes.push(last.code);
    assert.equal(codes, [0, 0, 8], last.message);
    assert.match(last.message ?? '', /more than 1 requests per second from identity /);
    const retry = last.details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo') as any;
    assert.match(String(retry?.retryDelay), /^[1-9]\d*s$/, JSON.stringify(last.details));
    assert.is((await limited.call('GET', '/iam/v2/groups')).status, 429);
    const text = await (await fetch(`${limited.url}/metrics`)).text();
    const handled = (code: string) =>
      new RegExp(
        `^grpc_server_handled_total\\{grpc_method="/chainguard\\.platform\\.iam\\.v2\\.GroupsService/ListGroups",grpc_code="${code}"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1];
    assert.is(handled('OK'), '2', text.slice(0, 3000));
    assert.is(handled('RESOURCE_EXHAUSTED'), '1');
    assert.match(
      text,
      /grpc_server_handling_seconds_count\{grpc_method="\/chainguard\.platform\.iam\.v2\.GroupsService\/ListGroups"\} 3/,
    );
  } finally {
    client.close();
    await limited.stop();
  }
});

test('bad operator settings stop the server with one line naming the variable', () => {
  for (const [env, message] of [
    [{ METRICS: 'public' }, /METRICS must be open, off or token/],
    [{ CORS_ORIGINS: 'app.example' }, /CORS_ORIGINS must be \* or origins/],
    [{ CORS_ORIGINS: 'https://app.example/path' }, /CORS_ORIGINS/],
    [{ MAX_BODY_BYTES: '10' }, /MAX_BODY_BYTES must be a whole number from 1024/],
    [{ RATE_LIMIT: 'fast' }, /RATE_LIMIT must be a whole number/],
    [{ RATE_LIMIT_BURST: '5' }, /RATE_LIMIT_BURST needs RATE_LIMIT/],
  ] as const) {
    assert.throws(
      () => readConfig({ DATA_DIR: '/tmp/x', ...env }),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
      JSON.stringify(env),
    );
  }
});

test('/readyz is 503 UNAVAILABLE, saying what is wrong, once another process changes the schema', async () => {
  const r = await startTestServer(generated);
  try {
    await query(r, 'create table not_ours (a integer)', [], true);
    const ready = await r.call('GET', '/readyz', undefined, anonymous);
    assert.is(ready.status, 503, JSON.stringify(ready.body));
    assert.is(ready.body.code, 14);
    assert.is(ready.body.details[0].reason, 'UNAVAILABLE');
    assert.match(ready.body.message, /schema: another process changed the schema/);
    assert.is((await r.call('GET', '/healthz', undefined, anonymous)).status, 200);
  } finally {
    await r.stop();
  }
});

test('LOG=on: JSON lines, level by outcome, route template, identity and reason, never a token', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-log-'));
  const env = { PORT: '0', DATA_DIR: dataDir, LOG: 'on' };
  const server = await spawnServer(env);
  try {
    const token = (await runScript('scripts/token.ts', [], env)).stdout.trim();
    const auth = { authorization: `Bearer ${token}` };
    const org = await (
      await fetch(`${server.url}/iam/v2/groups`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"name":"logged"}',
      })
    ).json();
    await fetch(`${server.url}/iam/v2/groups/${org.uid}`, { headers: auth });
    await fetch(`${server.url}/iam/v2/groups?page_token=secret-looking`, { headers: auth });
    await fetch(`${server.url}/iam/v2/groups/${org.uid}/0123456789abcdef`, { headers: auth });
    await fetch(`${server.url}/iam/v2/groups`, { headers: { authorization: 'Bearer not.a.token' } });
    await fetch(`${server.url}/healthz`);
    const client = grpcClient(server.url, token);
    await client.call('iam.v2.GroupsService', 'GetGroup', { uid: org.uid });
    await client.call('iam.v2.GroupsService', 'GetGroup', { uid: `${org.uid}/0123456789abcdef` });
    client.close();
    server.child.kill('SIGTERM');
    assert.is(await exitOf(server.child), 0, server.output());
    const lines = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    assert.match(lines[0].message, /^platform-api \d+\.\d+\.\d+ listening on http:\/\//, JSON.stringify(lines[0]));
    assert.is(lines[0].release, JSON.parse(readFileSync('package.json', 'utf8')).version);
    assert.ok(lines[0].startUpMs);
    const requests = lines.filter((l) => l.method);
    const [created, read, badQuery, missing, refused] = requests;
    assert.equal(
      [created.level, created.status, created.route, created.identity],
      ['info', 200, '/iam/v2/groups', JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sub],
    );
    assert.equal([read.level, read.route], ['info', '/iam/v2/groups/*']);
    assert.equal([badQuery.level, badQuery.status, badQuery.reason], ['warn', 400, 'INVALID_ARGUMENT']);
    assert.not.ok('query' in badQuery);
    assert.equal([missing.level, missing.status, missing.reason], ['warn', 404, 'NOT_FOUND']);
    assert.equal([refused.level, refused.status, refused.reason], ['warn', 401, 'UNAUTHENTICATED']);
    assert.is(requests.length, 5, 'a probe that succeeds is not logged');
    const rpcs = lines.filter((l) => l.grpc);
    const subject = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sub;
    assert.equal(
      rpcs.map((l) => [l.level, l.grpc, l.status, l.identity, l.reason]),
      [
        ['info', '/chainguard.platform.iam.v2.GroupsService/GetGroup', 'OK', subject, undefined],
        ['warn', '/chainguard.platform.iam.v2.GroupsService/GetGroup', 'NOT_FOUND', subject, 'NOT_FOUND'],
      ],
    );
    assert.ok(lines.some((l) => l.signal === 'SIGTERM'));
    assert.is(lines.at(-1).message, 'platform-api stopped');
    assert.not.ok(server.output().includes(token), 'the token never appears');
    assert.not.ok(server.output().includes('secret-looking'), 'no query value');
  } finally {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
