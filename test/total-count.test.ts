// totalCount from the per-scope counts kept in each write's transaction: exact against a count of the rows
// themselves, after creates, deletes with cascades, an import from another process, for a caller who sees only
// part of the tree, and after a restart on a database whose counts were never kept (made by an older version).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { readConfig } from '../runtime/operate/config.js';
import { startServer } from '../server/server.js';
import { query } from './support/db.js';
import { runScript } from './support/process.js';
import { startTestServer, type TestServer } from './support/server.js';

/** The SQLite file of a data directory (a server this file starts by itself). */
const sqliteIn = (dataDir: string) => ({
  database: { engine: 'sqlite' as const, file: join(dataDir, 'platform.sqlite') },
});

let s: TestServer;
let org: string;
let a: string;
let b: string;
let c: string;
const repos: string[] = [];

const ok = async (p: Promise<{ status: number; body: any }>) => {
  const r = await p;
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body;
};

/** Every list whose totalCount comes from the counts, with the rows it must count, by SQL of the test's own. */
const cases = () => [
  [`/registry/v2/repos?uidp.descendants_of=${org}`, `select count(*) n from repos where uid like '${org}/%'`],
  [`/registry/v2/repos?uidp.descendants_of=${a}`, `select count(*) n from repos where uid like '${a}/%'`],
  [`/registry/v2/repos?uidp.children_of=${a}`, `select count(*) n from repos where parent_uid = '${a}'`],
  [`/registry/v2/repos?uidp.descendants_of=${b}`, `select count(*) n from repos where uid like '${b}/%'`],
  ['/registry/v2/repos', 'select count(*) n from repos'],
  [`/registry/v2/tags?uidp.descendants_of=${org}`, `select count(*) n from tags where uid like '${org}/%'`],
  [`/registry/v2/tags?uidp.children_of=${repos[0]}`, `select count(*) n from tags where parent_uid = '${repos[0]}'`],
  [`/iam/v2/groups?uidp.descendants_of=${org}`, `select count(*) n from groups where uid like '${org}/%'`],
  [`/iam/v2/groups?uidp.children_of=${org}`, `select count(*) n from groups where parent_uid = '${org}'`],
  ['/iam/v2/groups?uidp.in_root=true', 'select count(*) n from groups where parent_uid is null'],
];

async function expectExact(server: TestServer, what: string) {
  for (const [path, sql] of cases()) {
    const listed = await ok(server.call('GET', `${path}${path.includes('?') ? '&' : '?'}page_size=1`));
    const [{ n }] = await query(server, sql);
    assert.is(listed.totalCount, String(n), `${what}: ${path}`);
  }
}

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
  a = (await ok(s.call('POST', `/iam/v2/groups/${org}`, { name: 'a' }))).uid;
  b = (await ok(s.call('POST', `/iam/v2/groups/${a}`, { name: 'b' }))).uid;
  c = (await ok(s.call('POST', `/iam/v2/groups/${org}`, { name: 'c' }))).uid;
  for (const [i, parent] of [org, a, a, b, b, b, c].entries())
    repos.push((await ok(s.call('POST', `/registry/v2/repos/${parent}`, { name: `r${i}` }))).uid);
  for (const [i, repo] of [repos[0], repos[0], repos[3]].entries())
    await ok(s.call('POST', `/registry/v2/tags/${repo}`, { name: `t${i}`, digest: `sha256:${String(i).repeat(64)}` }));
});
test.after(async () => s.stop());

test('counts are exact after creates', () => expectExact(s, 'created'));

test('the total of a scope is the kept count itself: no rows are counted for it', async () => {
  // A scope's count is the sum of its shards (the scope's own row, and on PostgreSQL <scope>#1..#15).
  const shards = "collection = 'repos' and (scope = ? or scope like ?)";
  const rows = await query(s, `select scope, below from scope_counts where ${shards}`, [a, `${a}#%`]);
  const total = rows.reduce((n, r) => n + Number(r.below), 0);
  const one = rows[0].scope as string;
  await query(
    s,
    "update scope_counts set below = below + 999990 where collection = 'repos' and scope = ?",
    [one],
    true,
  );
  try {
    const listed = await ok(s.call('GET', `/registry/v2/repos?uidp.descendants_of=${a}`));
    assert.is(listed.totalCount, String(total + 999990));
    const filtered = await ok(s.call('GET', `/registry/v2/repos?uidp.descendants_of=${a}&name=r1`));
    assert.is(filtered.totalCount, '1', 'a list with a filter is counted by SQL');
  } finally {
    await query(
      s,
      "update scope_counts set below = below - 999990 where collection = 'repos' and scope = ?",
      [one],
      true,
    );
  }
});

test('deletes, a cascade (a repo and its tags) among them, leave the counts exact', async () => {
  await ok(s.call('DELETE', `/registry/v2/repos/${repos[0]}`));
  await ok(s.call('DELETE', `/registry/v2/repos/${repos[5]}`));
  await expectExact(s, 'after deletes');
  repos.splice(0, 1);
});

test('an import by another process while the server runs is counted as it commits', async () => {
  const file = `${s.dataDir}/repos.json`;
  writeFileSync(file, JSON.stringify(Array.from({ length: 30 }, (_, i) => ({ name: `imported-${i}` }))));
  const r = await runScript('scripts/import.ts', ['repos', file, '--parent', b], s.env);
  assert.is(r.status, 0, r.stderr);
  await expectExact(s, 'after an import');
});

test('a caller who sees only part of the tree is counted only what it sees', async () => {
  const viewer = (await ok(s.call('GET', '/iam/v2/roles?name=viewer'))).roles[0].uid;
  const who = (await ok(s.call('POST', `/iam/v2/identities/${org}`, { name: 'partial' }))).uid;
  await ok(s.call('POST', `/iam/v2/roleBindings/${a}`, { identityUid: who, roleUid: viewer }));
  await ok(s.call('POST', `/iam/v2/roleBindings/${c}`, { identityUid: who, roleUid: viewer }));
  const as = { authorization: `Bearer ${await s.mint(who)}` };
  const total = async (path: string) => (await ok(s.call('GET', path, undefined, as))).totalCount;
  const count = async (sql: string) => String((await query(s, sql))[0].n);
  const seen = `(uid like '${a}/%' or uid like '${c}/%')`;
  assert.is(
    await total(`/registry/v2/repos?uidp.descendants_of=${org}`),
    await count(`select count(*) n from repos where ${seen}`),
  );
  assert.is(await total('/registry/v2/repos'), await count(`select count(*) n from repos where ${seen}`));
  assert.is(await total(`/registry/v2/repos?uidp.children_of=${org}`), '0');
  assert.is(await total(`/iam/v2/groups?uidp.children_of=${org}`), '2', 'the groups it holds a role in');
  assert.is(
    await total(`/iam/v2/groups?uidp.descendants_of=${org}`),
    await count(`select count(*) n from groups where uid in ('${a}', '${c}') or ${seen}`),
  );
  const listed = (await ok(s.call('GET', `/registry/v2/repos?uidp.descendants_of=${org}&page_size=200`, undefined, as)))
    .repos.length;
  assert.is(await total(`/registry/v2/repos?uidp.descendants_of=${org}`), String(listed), 'as many as it can list');
});

test('a database whose counts were never kept gets them at start, once', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-counts-'));
  const config = readConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG: 'off' });
  const serve = async () => {
    const server = await startServer(config);
    const token = (await server.issuer.mint(readBootstrap(dataDir)!.owner)).token;
    const call = async (method: string, path: string, body?: unknown) => {
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const res = await fetch(server.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    return { server, call };
  };
  const first = await serve();
  const root = readBootstrap(dataDir)!.organization;
  for (const name of ['x', 'y', 'z']) await ok(first.call('POST', `/registry/v2/repos/${root}`, { name }));
  await first.server.close();
  await query(sqliteIn(dataDir), 'delete from scope_counts', [], true);
  const second = await serve();
  try {
    const listed = await ok(second.call('GET', `/registry/v2/repos?uidp.descendants_of=${root}&page_size=1`));
    assert.is(listed.totalCount, '3');
    const built = await query(
      sqliteIn(dataDir),
      "select count(*) n from scope_counts where collection = '' and scope = 'built'",
    );
    assert.is(built[0].n, 1);
  } finally {
    await second.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
