// A PostgreSQL outage under a running server (issue 29, item 5): a private cluster of this file's own is stopped
// while the server runs. Reads and writes answer 503 UNAVAILABLE with a RetryInfo over HTTP, 14 over gRPC, never
// a 500; once the database is back the same process answers 200 again, without a restart. The delivery worker
// backs off meanwhile and logs the outage once, and its end once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { readBootstrap } from '../runtime/access/bootstrap.js';
// @ts-expect-error a plain ESM script without types
import { startCluster } from '../scripts/tooling/postgres-cluster.mjs';
import { grpcClient, type GrpcTestClient } from './support/grpc-client.js';
import { runScript, spawnServer, type ServerProcess } from './support/process.js';

interface Cluster {
  base: string;
  createDatabase(prefix: string): Promise<string>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}

let cluster: Cluster;
let dataDir: string;
let server: ServerProcess;
let grpc: GrpcTestClient;
let token: string;
let org: string;

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function assertUnavailable(r: { status: number; body: any }, what: string) {
  assert.is(r.status, 503, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, 14);
  assert.ok(
    r.body.details.some((d: { retryDelay?: string }) => /^\d+s$/.test(d.retryDelay ?? '')),
    `${what} has a RetryInfo`,
  );
}

test.before(async () => {
  cluster = await startCluster({ endWithProcess: true });
  const env = { PORT: '0', DATA_DIR: (dataDir = mkdtempSync(join(tmpdir(), 'platform-api-faults-'))) };
  const url = await cluster.createDatabase('faults');
  server = await spawnServer({ ...env, DATABASE_URL: url, LOG: 'on' });
  org = readBootstrap(dataDir)!.organization;
  const minted = await runScript('scripts/token.ts', [], { ...env, DATABASE_URL: url });
  assert.is(minted.status, 0, minted.stderr);
  token = minted.stdout.trim();
  grpc = grpcClient(server.url, token);
});

test.after(async () => {
  grpc?.close();
  if (server) {
    const gone = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGTERM');
    await gone;
  }
  // The cluster's process does not hold this one open (it ends with it): held here until it has stopped.
  const held = setInterval(() => undefined, 1000);
  await cluster?.stop();
  clearInterval(held);
  rmSync(dataDir, { recursive: true, force: true });
});

test('with PostgreSQL stopped reads and writes answer 503 with RetryInfo (gRPC 14); back, 200 without a restart', async () => {
  assert.is((await call('GET', `/iam/v2/groups/${org}`)).status, 200);
  await cluster.pause();
  try {
    assertUnavailable(await call('GET', `/registry/v2/repos?uidp.descendants_of=${org}`), 'a list');
    assertUnavailable(await call('POST', `/registry/v2/repos/${org}`, { name: 'during-outage' }), 'a create');
    const rpc = await grpc.call('registry.v2.ReposService', 'CreateRepo', { parent: org, repo: { name: 'rpc' } });
    assert.is(rpc.code, 14, `gRPC: ${rpc.message}`);
    assert.ok(
      rpc.details.some((d) => d['@type'].endsWith('RetryInfo')),
      'gRPC has a RetryInfo',
    );
    // Two seconds of outage: ten of the delivery worker's 200 ms polls, logged once, not at every poll.
    await new Promise((resolve) => setTimeout(resolve, 2000));
  } finally {
    await cluster.resume();
  }
  // The pool connects again on its own: the same process answers once the database is back.
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = (await call('POST', `/registry/v2/repos/${org}`, { name: 'after-outage' })).status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.is(status, 200, 'a create succeeds again');
  assert.is((await call('GET', `/registry/v2/repos?uidp.descendants_of=${org}`)).body.totalCount, '1');
  assert.not.match(server.output(), /"status":500/);
  // The worker's next pass comes at the end of its backoff (at most 10 s): waited for.
  const workerLines = () =>
    server
      .output()
      .split('\n')
      .filter((line) => line.includes('"worker":"events"'));
  for (let i = 0; i < 150 && !workerLines().some((line) => line.includes('passes succeed again')); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  // The signing keys' watcher (4 looks a second) alike: the outage once, the keys read again once.
  const keysLines = server
    .output()
    .split('\n')
    .filter((line) => line.includes('"watch":"signing-keys"'));
  assert.is(keysLines.length, 2, keysLines.join('\n'));
  assert.match(keysLines[0], /"level":"error".*cannot be reached/);
  assert.match(keysLines[1], /"level":"info".*read again/);
  const worker = workerLines();
  assert.is(worker.filter((line) => line.includes('"level":"error"')).length, 1, worker.join('\n'));
  assert.ok(
    worker.some((line) => line.includes('passes succeed again')),
    'the recovery is logged',
  );
});

test('a database whose text ordering is not byte order is refused at start, with the command that makes a right one', async () => {
  // ICU with lc_collate C: the collation's name passes, the ordering does not (a_b sorts before a-b).
  const admin = new pg.Client({ connectionString: `${cluster.base}/postgres` });
  await admin.connect();
  try {
    await admin.query(
      "create database icu_ordered template template0 locale_provider icu icu_locale 'en-US' lc_collate 'C' lc_ctype 'C'",
    );
  } finally {
    await admin.end();
  }
  const dir = mkdtempSync(join(tmpdir(), 'platform-api-icu-'));
  try {
    const refused = await spawnServer({ PORT: '0', DATA_DIR: dir, DATABASE_URL: `${cluster.base}/icu_ordered` }).then(
      () => '',
      (e: Error) => e.message,
    );
    assert.match(refused, /sorts text in the order of its collation/);
    assert.match(refused, /createdb --locale=C --locale-provider=libc --template=template0/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
