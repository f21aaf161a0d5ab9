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
import { createOrg, startTestServer, type TestServer } from './support/server.js';

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

/** A server's db_write_retries_total by outcome, from /metrics. */
async function retries(s: TestServer): Promise<Record<string, number>> {
  const text = (await s.call('GET', '/metrics')).body as string;
  const found = [...text.matchAll(/^db_write_retries_total\{outcome="(\w+)"\} (\d+)$/gm)];
  assert.ok(found.length > 0, 'db_write_retries_total is exported');
  return Object.fromEntries(found.map(([, outcome, n]) => [outcome, Number(n)]));
}

test('PostgreSQL: bindings made and removed while their holders write, through two instances: none ABORTED, no write after its grant went', async () => {
  const url = await newDatabase();
  const a = await startTestServer(undefined, { DATABASE_URL: url });
  const instances = [a, await startTestServer(undefined, { DATABASE_URL: url })];
  const via = (n: number) => instances[n % 2];
  try {
    const org = a.bootstrap.organization;
    const folder = (await a.call('POST', `/iam/v2/groups/${org}`, { name: 'shared' })).body.uid as string;
    const roles = (await a.call('GET', '/iam/v2/roles?page_size=200')).body.roles as { name: string; uid: string }[];
    const editor = roles.find((r) => r.name === 'editor')!.uid;
    const identity = async (name: string) =>
      (await a.call('POST', `/iam/v2/identities/${org}`, { name })).body.uid as string;
    const bind = (n: number, identityUid: string) =>
      via(n).call('POST', `/iam/v2/roleBindings/${folder}`, { identityUid, roleUid: editor });
    const holders = await Promise.all([0, 1, 2].map((n) => identity(`holder-${n}`)));
    const bindings = await Promise.all(holders.map(async (h, n) => (await bind(n, h)).body.uid as string));
    const others = await Promise.all([0, 1, 2, 3].map((n) => identity(`other-${n}`)));
    const answers: { what: string; status: number; message?: string }[] = [];
    // Each holder creates repos through both instances in turn until refused; its binding is removed meanwhile.
    const holding = holders.map(async (holder, h) => {
      // A token of each instance's own issuer (each serves at its own URL here).
      const tokens = await Promise.all(instances.map((s) => s.mint(holder)));
      const as = (n: number) => ({ authorization: `Bearer ${tokens[n % 2]}` });
      const writes: { sentAt: number; status: number }[] = [];
      const revoked = (async () => {
        while (writes.length < 3 + h) await new Promise((resolve) => setTimeout(resolve, 5));
        const r = await via(h + 1).call('DELETE', `/iam/v2/roleBindings/${bindings[h]}`);
        answers.push({ what: `delete binding ${h}`, status: r.status, message: r.body?.message });
        return performance.now();
      })();
      for (let n = 0; n < 100; n++) {
        const sentAt = performance.now();
        const r = await via(n + h).call('POST', `/registry/v2/repos/${folder}`, { name: `h${h}-${n}` }, as(n + h));
        writes.push({ sentAt, status: r.status });
        if (r.status !== 200)
          answers.push({ what: `holder ${h} write ${n}`, status: r.status, message: r.body.message });
        if (r.status === 403) break;
      }
      return { writes, revokedAt: await revoked };
    });
    // Meanwhile, in the same tenant, the owner binds other identities and removes the bindings again.
    const churning = others.map(async (other, n) => {
      for (let round = 0; round < 4; round++) {
        const made = await bind(n + round, other);
        answers.push({ what: `bind other ${n}`, status: made.status, message: made.body.message });
        if (made.status !== 200) continue;
        const gone = await via(n + round + 1).call('DELETE', `/iam/v2/roleBindings/${made.body.uid}`);
        answers.push({ what: `unbind other ${n}`, status: gone.status, message: gone.body?.message });
      }
    });
    const held = await Promise.all(holding);
    await Promise.all(churning);
    // Only the holders' last writes are refused (403); nothing ABORTED, nothing else refused.
    assert.equal(
      answers.filter((x) => !(x.status === 200 || (x.status === 403 && x.what.startsWith('holder')))),
      [],
    );
    for (const [h, { writes, revokedAt }] of held.entries()) {
      // No write sent after its grant's removal was answered lands.
      assert.equal(
        writes.filter((w) => w.sentAt > revokedAt && w.status === 200),
        [],
        `holder ${h}: no write committed once its binding was gone`,
      );
      assert.is(writes.at(-1)!.status, 403, `holder ${h} is refused in the end`);
    }
    // None of these writes runs SERIALIZABLE: none ran again for a serialization failure, none ended ABORTED.
    for (const s of instances) {
      const lost = await retries(s);
      assert.is(lost.serialization, 0, JSON.stringify(lost));
      assert.is(lost.aborted, 0, JSON.stringify(lost));
    }
  } finally {
    await Promise.all(instances.map((s) => s.stop()));
  }
});

test.after(stopOwnCluster);

test.run();
