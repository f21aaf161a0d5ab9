// The server on PostgreSQL (DATABASE_URL=postgres://...), against a real PostgreSQL (test/support/postgres.ts):
// the whole conformance suite, and two server processes on one database behind no balancer but the test, which
// alternates between them.
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig } from '../runtime/operate/config.js';
import { startServer, type RunningServer } from '../server/server.js';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { runScript } from './support/process.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface Instance {
  server: RunningServer;
  call(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }>;
}

let dataDir: string;
let a: Instance;
let b: Instance;
let token: string;
let org: string;
let databaseUrl: string;

async function instance(databaseUrl: string): Promise<Instance> {
  // Behind one public URL (the issuer of both), sharing the data directory's keys and page-token secret
  // (docs/operating.md, "Several instances on PostgreSQL").
  const server = await startServer(
    readConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG: 'off',
      DATABASE_URL: databaseUrl,
      ISSUER_URL: 'http://platform.test',
    }),
  );
  return {
    server,
    async call(method, path, body, as = token) {
      const res = await fetch(server.url + path, {
        method,
        headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
  };
}

test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'platform-api-pg-'));
  databaseUrl = await newDatabase();
  a = await instance(databaseUrl);
  b = await instance(databaseUrl);
  const boot = readBootstrap(dataDir)!;
  org = boot.organization;
  token = (await a.server.issuer.mint(boot.owner)).token;
});
test.after(async () => {
  await Promise.all([a?.server.close(), b?.server.close()]);
  rmSync(dataDir, { recursive: true, force: true });
  await stopOwnCluster();
});

test('the whole conformance suite passes on PostgreSQL', async () => {
  const r = await runScript('scripts/conformance.ts', ['--base-url', a.server.url, '--token', token], {});
  assert.is(r.status, 0, r.stdout.slice(-3000) + r.stderr);
  assert.match(r.stdout, /^\d+ passed, 0 failed, \d+ skipped$/m);
});

test('a write through one instance is read through the other at once, and pages continue across them', async () => {
  const folder = (await a.call('POST', `/iam/v2/groups/${org}`, { name: 'shared' })).body.uid;
  const made = await b.call('POST', `/registry/v2/repos/${folder}`, { name: 'from-b' });
  assert.is(made.status, 200, JSON.stringify(made.body));
  assert.is((await a.call('GET', `/registry/v2/repos/${made.body.uid}`)).body.name, 'from-b');
  await a.call('PATCH', `/registry/v2/repos/${made.body.uid}`, { description: 'patched on a' });
  assert.is((await b.call('GET', `/registry/v2/repos/${made.body.uid}`)).body.description, 'patched on a');
  for (let i = 0; i < 5; i++) await (i % 2 ? a : b).call('POST', `/registry/v2/repos/${folder}`, { name: `r${i}` });
  const first = await a.call('GET', `/registry/v2/repos?uidp.children_of=${folder}&page_size=4&order_by=name`);
  assert.is(first.body.totalCount, '6');
  const second = await b.call(
    'GET',
    `/registry/v2/repos?uidp.children_of=${folder}&page_size=4&order_by=name&page_token=${first.body.nextPageToken}`,
  );
  assert.is(second.status, 200, JSON.stringify(second.body));
  assert.equal(
    [...first.body.repos, ...second.body.repos].map((r: { name: string }) => r.name),
    ['from-b', 'r0', 'r1', 'r2', 'r3', 'r4'],
  );
  await b.call('DELETE', `/registry/v2/repos/${made.body.uid}`);
  assert.is((await a.call('GET', `/registry/v2/repos/${made.body.uid}`)).status, 404);
});

test('concurrent creates through both instances are all kept, and counted exactly', async () => {
  const folder = (await b.call('POST', `/iam/v2/groups/${org}`, { name: 'busy' })).body.uid;
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) =>
      (i % 2 ? a : b).call('POST', `/registry/v2/repos/${folder}`, { name: `c${i}` }),
    ),
  );
  assert.ok(
    results.every((r) => r.status === 200),
    JSON.stringify(results.find((r) => r.status !== 200)),
  );
  for (const instance of [a, b]) {
    const listed = await instance.call('GET', `/registry/v2/repos?uidp.children_of=${folder}&page_size=100`);
    assert.is(listed.body.totalCount, '60');
    assert.is(listed.body.repos.length, 60);
    const below = await instance.call('GET', `/registry/v2/repos?uidp.descendants_of=${org}&page_size=1`);
    assert.ok(Number(below.body.totalCount) >= 60);
  }
});

test('a role binding removed on one instance is refused on the other within a second', async () => {
  const team = (await a.call('POST', `/iam/v2/groups/${org}`, { name: 'team' })).body.uid;
  const repo = (await a.call('POST', `/registry/v2/repos/${team}`, { name: 'guarded' })).body.uid;
  const robot = (await a.call('POST', `/iam/v2/identities/${org}`, { name: 'robot' })).body.uid;
  const viewer = (await a.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const binding = (await a.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: robot, roleUid: viewer })).body;
  const robotToken = (await a.server.issuer.mint(robot)).token;
  const read = async () => (await b.call('GET', `/registry/v2/repos/${repo}`, undefined, robotToken)).status;
  assert.is(await read(), 200, 'allowed on b while bound');
  assert.is((await a.call('DELETE', `/iam/v2/roleBindings/${binding.uid}`)).status, 200);
  const deadline = Date.now() + 1000;
  let status = 200;
  while (status === 200 && Date.now() < deadline) {
    status = await read();
    if (status === 200) await new Promise((r) => setTimeout(r, 20));
  }
  assert.is(status, 403, 'b still allowed the read a second after the binding went');
});

test('a key rotated by one instance signs tokens the other accepts', async () => {
  await a.server.issuer.rotate();
  const fresh = (await a.server.issuer.mint(readBootstrap(dataDir)!.owner)).token;
  assert.is((await b.call('GET', `/iam/v2/groups/${org}`, undefined, fresh)).status, 200);
});

test('npm run import and npm run events work on PostgreSQL too', async () => {
  const env = { DATA_DIR: dataDir, DATABASE_URL: databaseUrl };
  for (const round of ['5 created', '5 updated']) {
    const r = await runScript('scripts/import.ts', ['advisories', 'samples/advisories.json', '--parent', org], env);
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`imported 5 advisories: .*${round}`));
    assert.match(r.stdout, /into PostgreSQL 127\.0\.0\.1:\d+\/platform_/);
  }
  const listed = await b.call('GET', `/vulnerabilities/v2/advisories?uidp.descendants_of=${org}`);
  assert.is(listed.body.totalCount, '5');
  const view = await runScript('scripts/events.ts', ['deliveries'], env);
  assert.is(view.status, 0, view.stderr);
});

test('npm run migrate on PostgreSQL: nothing to do at the current version; a newer database is refused', async () => {
  const env = { DATABASE_URL: databaseUrl, DATA_DIR: dataDir };
  const plan = await runScript('scripts/migrate.ts', ['--dry-run'], env);
  assert.is(plan.status, 0, plan.stderr);
  assert.match(plan.stdout, /version (\d+) -> version \1\nthe tables match this server: nothing to apply/);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("insert into schema_migrations (version, applied_time, statements) values (99, 'now', '')");
    const refused = await runScript('server/main.ts', [], { ...env, PORT: '0' });
    assert.is(refused.status, 1);
    assert.match(refused.stderr, /the database's schema is at version 99, newer than this server's \d+/);
    const migrate = await runScript('scripts/migrate.ts', [], env);
    assert.is(migrate.status, 1);
    assert.match(migrate.stderr, /newer than this server's \d+/);
  } finally {
    await client.query('delete from schema_migrations where version = 99');
    await client.end();
  }
});

test('an unreachable database is one line naming DATABASE_URL and the host, never the password', async () => {
  const r = await runScript('server/main.ts', [], {
    DATABASE_URL: 'postgres://someone:s3cret-pw@127.0.0.1:1/nothing',
    DATA_DIR: dataDir,
    PORT: '0',
  });
  assert.is(r.status, 1);
  assert.match(r.stderr, /DATABASE_URL: cannot use PostgreSQL at 127\.0\.0\.1:1\/nothing/);
  assert.not.match(r.stderr + r.stdout, /s3cret-pw/);
});

test.run();
