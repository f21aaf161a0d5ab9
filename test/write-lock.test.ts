// SQLite: another process holding the database's write lock (an import's long transaction) makes our writes
// wait, not the server: reads and pings are answered meanwhile, and the waiting write lands once the lock is
// released. PostgreSQL has no lock wider than rows: a write waiting for a row of one organization holds up no
// write of another, seen in pg_stat_activity while both are in flight; many writers of one record each wait their
// turn for its row instead of losing races until ABORTED.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newDatabase, onPostgres, stopOwnCluster } from './support/postgres.js';
import { createOrg, startTestServer } from './support/server.js';

// SQLite's: with TEST_ENGINE=postgresql the test servers are on PostgreSQL, which the second test covers.
const onSqlite = onPostgres() ? test.skip : test;

onSqlite('a write waits for another process holding the lock while the server keeps answering', async () => {
  const s = await startTestServer();
  const holder = new Database(join(s.dataDir, 'platform.sqlite'));
  try {
    const org = s.bootstrap.organization;
    holder.exec('begin immediate');
    let settled = false;
    const create = s.call('POST', `/registry/v2/repos/${org}`, { name: 'waits' }).finally(() => (settled = true));
    for (let i = 0; i < 5; i++) {
      assert.is((await s.call('GET', '/ping/v2/ping')).status, 200);
      assert.is((await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${org}`)).status, 200);
    }
    assert.is(settled, false, 'the write is still waiting for the lock');
    holder.exec('commit');
    const created = await create;
    assert.is(created.status, 200, JSON.stringify(created.body));
    assert.is((await s.call('GET', `/registry/v2/repos/${created.body.uid}`)).body.name, 'waits');
  } finally {
    holder.close();
    await s.stop();
  }
});

test('PostgreSQL: a write waiting for a row of one organization holds up no write of another', async () => {
  const s = await startTestServer(undefined, { DATABASE_URL: await newDatabase() });
  const url = (s.database as { url: string }).url;
  // One connection holds a row; another watches (outside a transaction, whose statistics would stay as first read).
  const [holder, watcher] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
  await holder.connect();
  await watcher.connect();
  try {
    const [a, b] = [await createOrg(s, 'a'), await createOrg(s, 'b')];
    // An operator's transaction holding organization a's row: a create under it waits for that row alone.
    await holder.query('begin');
    await holder.query('select uid from groups where uid = $1 for update', [a]);
    let settled = false;
    const waiting = s.call('POST', `/registry/v2/repos/${a}`, { name: 'waits' }).finally(() => (settled = true));
    // Backends of this database waiting for a lock: seen, not guessed from a write not answered yet.
    const waitingForLocks = async () =>
      (
        await watcher.query(
          "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
        )
      ).rows[0].n as number;
    while ((await waitingForLocks()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    // A write in organization b meanwhile: answered, or (with a lock wider than rows) a second backend waiting.
    let other: { status: number; body: any } | undefined;
    void s.call('POST', `/registry/v2/repos/${b}`, { name: 'goes' }).then((r) => (other = r));
    while (!other && (await waitingForLocks()) < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(other, "the write in organization b waited behind the one in a's row");
    assert.is(other!.status, 200, JSON.stringify(other!.body));
    assert.is(settled, false, 'the write in organization a is still waiting for its row');
    await holder.query('commit');
    const created = await waiting;
    assert.is(created.status, 200, JSON.stringify(created.body));
  } finally {
    await holder.query('rollback').catch(() => undefined);
    await holder.end();
    await watcher.end();
    await s.stop();
  }
});

test('PostgreSQL: concurrent writes of one hot record and one scope all land, none ABORTED', async () => {
  const s = await startTestServer(undefined, { DATABASE_URL: await newDatabase() });
  try {
    const org = s.bootstrap.organization;
    const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'hot' })).body.uid as string;
    // Many writers on one row, each writing again as soon as answered (as a load generator does): each waits
    // its turn for the row, none loses races it cannot win until ABORTED.
    const writers = 12;
    const refused: string[] = [];
    await Promise.all(
      Array.from({ length: writers }, async (_, i) => {
        for (let n = 0; n < 15; n++) {
          const p = await s.call('PATCH', `/registry/v2/repos/${repo}`, { description: `writer ${i} ${n}` });
          if (p.status !== 200) refused.push(`${p.status} ${p.body.message}`);
        }
      }),
    );
    assert.equal(refused, [], 'every patch of the hot record landed');
    const creates = await Promise.all(
      Array.from({ length: writers }, (_, i) => s.call('POST', `/registry/v2/repos/${org}`, { name: `r${i}` })),
    );
    assert.equal(
      creates.filter((c) => c.status !== 200).map((c) => c.body.message),
      [],
      'every create in the one scope landed',
    );
    const listed = await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}&page_size=100`);
    assert.is(listed.body.repos.length, writers + 1);
    assert.is(listed.body.totalCount, String(writers + 1));
  } finally {
    await s.stop();
  }
});

test.after(stopOwnCluster);

test.run();
