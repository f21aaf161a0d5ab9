// compose.yaml's topology with local processes: HAProxy (Debian's package, scripts/tooling/haproxy.mjs) with the same
// haproxy.cfg in front of two release instances (test/support/release.ts: the image's CMD and ENV) on one
// PostgreSQL database, each instance with compose.yaml's environment, where only what names compose's network
// (the database host, the public URL, the proxies' network) is replaced by its local counterpart. Writes through
// one instance are read through the other, HAProxy balances each request in turn, and its health checks take a
// stopping instance out before it stops answering. Skipped, saying why, where HAProxy is missing and cannot be
// installed (not root).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { readBootstrap } from '../runtime/access/bootstrap.js';
// @ts-expect-error a plain ESM script without types: ensureHaproxy() returns the binary's path or throws why not
import { ensureHaproxy } from '../scripts/tooling/haproxy.mjs';
import { grpcClient } from './support/grpc-client.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { exitOf, runScript } from './support/process.js';
import { builtRelease, startRelease, type ReleaseProcess } from './support/release.js';

let haproxyBinary: string | undefined;
try {
  haproxyBinary = ensureHaproxy() as string;
} catch (e) {
  console.log(`[compose] SKIPPED: ${(e as Error).message}`);
}
const maybe = haproxyBinary ? test : test.skip;

const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true });
const services = compose.services as Record<string, { environment: Record<string, string> }>;
/** What names compose's network, replaced by the local counterpart; every other variable is used as it is. */
const networkVariables = ['DATABASE_URL', 'ISSUER_URL', 'TRUSTED_PROXIES'];

const scratch = mkdtempSync(join(tmpdir(), 'platform-api-compose-'));
let api1: ReleaseProcess | undefined;
let api2: ReleaseProcess | undefined;
let haproxy: ChildProcess | undefined;
let haproxyOutput = '';
let lb = '';
let token = '';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** How many requests for path an instance has logged (LOG=on: one JSON line each). */
const served = (instance: ReleaseProcess, path: string) =>
  instance
    .output()
    .split('\n')
    .filter((l) => l.includes(`"path":"${path}"`)).length;

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`not within ${ms / 1000} s: ${what}\n${haproxyOutput}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const ping = async (url: string) => (await fetch(`${url}/ping/v2/ping`)).status;

async function call(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

test.before(async () => {
  if (!haproxyBinary) return;
  const { dir } = builtRelease();
  const lbPort = await freePort();
  lb = `http://127.0.0.1:${lbPort}`;
  const local: Record<string, string> = {
    DATABASE_URL: await newDatabase(),
    ISSUER_URL: lb,
    TRUSTED_PROXIES: '127.0.0.1',
  };
  const instanceEnv = (name: string) => {
    const env = services[name].environment;
    assert.ok(
      networkVariables.every((v) => v in env),
      `compose.yaml's ${name} sets ${networkVariables.join(', ')}`,
    );
    // The shared volume at /data: one directory for both.
    return { ...env, ...local, PORT: '0', DATA_DIR: join(scratch, 'data') };
  };
  // compose starts api2 once api1 is healthy: api1 migrates and makes the keys in the database.
  api1 = await startRelease(dir, instanceEnv('api1'));
  await until('api1 ready', async () => (await fetch(`${api1!.url}/readyz`)).status === 200);
  api2 = await startRelease(dir, instanceEnv('api2'));
  await until('api2 ready', async () => (await fetch(`${api2!.url}/readyz`)).status === 200);

  const lbEnv = services.haproxy.environment;
  assert.equal(Object.keys(lbEnv).sort(), ['API1', 'API2', 'LISTEN_PORT']);
  haproxy = spawn(haproxyBinary, ['-db', '-f', 'haproxy.cfg'], {
    env: {
      PATH: process.env.PATH,
      LISTEN_PORT: String(lbPort),
      API1: new URL(api1.url).host,
      API2: new URL(api2.url).host,
    },
  });
  haproxy.stdout!.on('data', (d) => (haproxyOutput += d));
  haproxy.stderr!.on('data', (d) => (haproxyOutput += d));
  await until('HAProxy answers', async () => (await ping(lb)) === 200);

  // The keys are in the database: the token command needs only its URL.
  const r = await runScript('scripts/token.ts', [], { DATABASE_URL: local.DATABASE_URL, ISSUER_URL: lb });
  assert.is(r.status, 0, r.stderr);
  token = r.stdout.trim();
});

test.after(async () => {
  // Ended and waited for: a child left running would keep the test run alive.
  const children = [haproxy, api1?.child, api2?.child].filter((c) => c !== undefined && c.exitCode === null);
  await Promise.all(children.map((c) => (c!.kill('SIGKILL'), exitOf(c!))));
  rmSync(scratch, { recursive: true, force: true });
  await stopOwnCluster();
});

maybe('a write through one instance is read through the other, directly and through HAProxy', async () => {
  const org = readBootstrap(join(scratch, 'data'))!.organization;
  const made = await call(api1!.url, 'POST', `/iam/v2/groups/${org}`, { name: 'made-on-api1' });
  assert.is(made.status, 200, JSON.stringify(made.body));
  const read = await call(api2!.url, 'GET', `/iam/v2/groups/${made.body.uid}`);
  assert.equal([read.status, read.body.name], [200, 'made-on-api1']);

  // Through HAProxy: the create lands on one instance, the four reads after it on both.
  const viaLb = await call(lb, 'POST', `/iam/v2/groups/${org}`, { name: 'made-through-haproxy' });
  assert.is(viaLb.status, 200, JSON.stringify(viaLb.body));
  for (let i = 0; i < 4; i++) {
    const again = await call(lb, 'GET', `/iam/v2/groups/${viaLb.body.uid}`);
    assert.equal([again.status, again.body.name], [200, 'made-through-haproxy']);
  }
});

maybe('HAProxy balances every request in turn, HTTP on one connection and gRPC', async () => {
  // A request's log line is written after its answer: the last ones before are let in first.
  await new Promise((r) => setTimeout(r, 200));
  const [before1, before2] = [served(api1!, '/ping/v2/ping'), served(api2!, '/ping/v2/ping')];
  // fetch keeps its connection to HAProxy open: the balance is per request, not per connection.
  for (let i = 0; i < 10; i++) assert.is(await ping(lb), 200);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(
    [served(api1!, '/ping/v2/ping') - before1, served(api2!, '/ping/v2/ping') - before2],
    [5, 5],
    'five each',
  );

  const grpc = grpcClient(lb, token);
  try {
    for (let i = 0; i < 4; i++) {
      const pong = await grpc.call('ping.v2.PingService', 'Ping', {});
      assert.equal([pong.code, pong.value], [0, { response: 'pong' }]);
    }
  } finally {
    grpc.close();
  }
});

maybe('a stopping instance is taken out by the health checks: every request through HAProxy is answered', async () => {
  api2!.child.kill('SIGTERM');
  let exited = false;
  const exit = exitOf(api2!.child).then((code) => ((exited = true), code));
  // api2 drains (DRAIN_SECONDS): /readyz answers 503 while it still answers requests. HAProxy's check sees the
  // 503 (not a refused connection) and takes it out before it stops; meanwhile and after, nothing fails.
  const down = /api-http\/api2 is DOWN, reason: Layer7 wrong status, code: 503/;
  const statuses: number[] = [];
  while (!exited && !down.test(haproxyOutput)) {
    statuses.push(await ping(lb));
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(down.test(haproxyOutput), `HAProxy's check took api2 out while it drained:\n${haproxyOutput}`);
  while (!exited) statuses.push(await ping(lb));
  assert.is(await exit, 0, api2!.output());
  assert.ok(
    statuses.every((s) => s === 200),
    `every request answered: ${statuses.join(',')}`,
  );
  // A request's log line is written after its answer: the last ones above are let in first.
  await new Promise((r) => setTimeout(r, 200));
  const before1 = served(api1!, '/ping/v2/ping');
  for (let i = 0; i < 6; i++) assert.is(await ping(lb), 200);
  await new Promise((r) => setTimeout(r, 200));
  assert.is(served(api1!, '/ping/v2/ping') - before1, 6, 'api1 answers them all');
});

test.run();
