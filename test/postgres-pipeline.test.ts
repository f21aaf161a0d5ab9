// A PostgreSQL transaction's statements sent in batches (runtime/storage/postgres-pipeline.ts), on a real
// PostgreSQL (test/support/postgres.ts): what is asked for in one turn is one round trip, answered in order; a
// failure rejects the statements after it with the same error; a name's Parse is remembered only once
// PostgreSQL has parsed it, so the connection runs every statement again after a failed batch. And through a
// running server, counted on the wire: a repo's create and patch are two round trips each. Reads on the pool:
// those asked in one turn are one round trip, each answered or failed on its own; a statement a connection has
// run before is not described again.
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PipelinedReads, PipelinedStatements } from '../runtime/storage/postgres-pipeline.js';
import { faultOf, isOutage } from '../runtime/storage/postgres-faults.js';
import { ApiError } from '../runtime/model/errors.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { countRoundTrips } from './support/round-trip-counter.js';
import { startTestServer } from './support/server.js';

let client: pg.Client;
/** ReadyForQuery messages: one per Sync, so one per round trip */
let roundTrips = 0;

test.before(async () => {
  client = new pg.Client({ connectionString: await newDatabase() });
  await client.connect();
  await client.query('create table pipeline_keys (k text primary key)');
  (client as unknown as { connection: pg.Connection }).connection.on('readyForQuery', () => roundTrips++);
});

test.after(async () => {
  await client.end();
  await stopOwnCluster();
});

const settled = (p: Promise<unknown>) =>
  p.then(
    (r) => ({ ok: r as pg.QueryResult }),
    (e: { code?: string }) => ({ error: e }),
  );

test('statements asked for in one turn, with a held begin, are one round trip, answered in order', async () => {
  const statements = new PipelinedStatements(client as unknown as pg.PoolClient);
  void statements.query('begin', [], 'pipeline-begin', undefined, true);
  const before = roundTrips;
  const [inserted, read, committed] = await Promise.all([
    statements.query('insert into pipeline_keys (k) values ($1)', ['a'], 'pipeline-insert'),
    statements.query('select k, 2 as n from pipeline_keys where k = $1', ['a'], 'pipeline-select', 'array'),
    statements.query('commit', [], 'pipeline-commit'),
  ]);
  assert.is(roundTrips - before, 1);
  assert.is(inserted.rowCount, 1);
  assert.equal(read.rows, [['a', 2]]);
  assert.is(committed.command, 'COMMIT');
  // Held alone, the begin sends nothing.
  const idle = new PipelinedStatements(client as unknown as pg.PoolClient);
  void idle.query('begin', [], 'pipeline-begin', undefined, true);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.is(roundTrips - before, 1);
  assert.is(idle.asked, false);
});

test('a failure rejects the statements after it with its error; names parsed before it run again unparsed', async () => {
  const statements = new PipelinedStatements(client as unknown as pg.PoolClient);
  void statements.query('begin', [], 'pipeline-begin', undefined, true).catch(() => undefined);
  // First seen by this connection: parsed in this batch, and the duplicate fails after its Parse.
  const [twin, after] = await Promise.all([
    settled(statements.query('insert into pipeline_keys (k) values ($1) returning k', ['a'], 'pipeline-twin')),
    settled(statements.query('select 1 as n', [], 'pipeline-after')),
  ]);
  assert.is('error' in twin && twin.error.code, '23505');
  assert.is('error' in after && after.error, 'error' in twin && twin.error);
  await statements.query('rollback', [], 'pipeline-rollback');
  // The same names again on the same connection: no "prepared statement already exists", and the statement
  // that never ran is parsed now.
  const again = new PipelinedStatements(client as unknown as pg.PoolClient);
  const [made, one] = await Promise.all([
    again.query('insert into pipeline_keys (k) values ($1) returning k', ['b'], 'pipeline-twin'),
    again.query('select 1 as n', [], 'pipeline-after'),
  ]);
  assert.equal(made.rows, [{ k: 'b' }]);
  assert.equal(one.rows, [{ n: 1 }]);
});

test('reads asked for in one turn are one round trip on one connection; a failed one fails alone', async () => {
  const counter = await countRoundTrips(await newDatabase());
  // One connection: every batch below goes on it, so it must be given back after each, failed or not.
  const pool = new pg.Pool({ connectionString: counter.url, max: 1 });
  const reads = new PipelinedReads(pool, () => false);
  try {
    const read = (n: number) =>
      reads.query('select 10 / $1::int as q, $2::jsonb as j', [n, { n }], 'pipeline-read', undefined);
    await read(1);
    const [trips, describes] = [counter.roundTrips(), counter.messages('D')];
    const answers = await Promise.all([1, 2, 0, 5, 10].map((n) => settled(read(n))));
    // The third fails (division by zero); the database skips the two after it, sent again: two round trips.
    assert.is(counter.roundTrips() - trips, 2);
    assert.equal(
      answers.map((a) => ('ok' in a ? a.ok.rows : a.error.code)),
      [[{ q: 10, j: { n: 1 } }], [{ q: 5, j: { n: 2 } }], '22012', [{ q: 2, j: { n: 5 } }], [{ q: 1, j: { n: 10 } }]],
    );
    // Described once, the first time the connection ran it: since then its rows are read with that description.
    assert.is(counter.messages('D') - describes, 0);
    // The connection went back to the pool: another read gets it.
    assert.equal((await read(10)).rows, [{ q: 1, j: { n: 10 } }]);
    // A burst goes in batches of at most maxBatch, each on a connection of its own as the pool has them.
    const before = counter.roundTrips();
    const burst = await Promise.all(Array.from({ length: 2 * reads.maxBatch + 1 }, (_, n) => read(n + 1)));
    assert.equal(burst.at(-1)!.rows, [{ q: 0, j: { n: 2 * reads.maxBatch + 1 } }]);
    assert.is(counter.roundTrips() - before, 3);
  } finally {
    await pool.end();
    await counter.close();
  }
});

/** A pool of `max` connections on a database of its own, ended after fn. */
async function withPool(options: pg.PoolConfig, fn: (pool: pg.Pool) => Promise<void>): Promise<void> {
  const pool = new pg.Pool({ connectionString: await newDatabase(), ...options });
  pool.on('error', () => undefined);
  try {
    await fn(pool);
  } finally {
    await pool.end();
  }
}

/** The outcome of each, or 'pending' for one not settled within ms. */
const outcomes = (reads: Promise<pg.QueryResult>[], ms: number) =>
  Promise.all(
    reads.map((r) =>
      Promise.race([
        settled(r).then((a) => ('ok' in a ? a.ok.rows : (a.error.code ?? String(a.error)))),
        new Promise((resolve) => setTimeout(() => resolve('pending'), ms)),
      ]),
    ),
  );

/** Ends, after 300 ms, each connection of the pool's database in `select pg_sleep(2)`; how many it ended. */
async function endSleepers(pool: pg.Pool): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const other = new pg.Client({ connectionString: pool.options.connectionString });
  await other.connect();
  try {
    const ended = await other.query(
      'select pg_terminate_backend(pid) from pg_stat_activity ' +
        "where datname = current_database() and query = 'select pg_sleep(2)' and pid <> pg_backend_pid()",
    );
    return ended.rowCount ?? 0;
  } finally {
    await other.end();
  }
}

test('reads after one PostgreSQL ended its connection under fail with it, not wait forever', async () => {
  await withPool({ max: 1 }, async (pool) => {
    const reads = new PipelinedReads(pool, (e) => (e as { code?: string }).code === '57P01');
    const batch = [
      reads.query('select pg_sleep(2)', [], 'pipeline-sleep'),
      reads.query('select 1 as n', [], 'pipeline-one'),
      reads.query('select 2 as n', [], 'pipeline-two'),
    ];
    const answered = outcomes(batch, 4000);
    assert.is(await endSleepers(pool), 1);
    assert.equal(await answered, ['57P01', '57P01', '57P01']);
    // The connection was not given back: the next read connects anew.
    assert.equal((await reads.query('select 1 as n', [], 'pipeline-one')).rows, [{ n: 1 }]);
  });
});

test('a read asked for once the pool has ended (a server shutting down) is UNAVAILABLE, not an internal error', async () => {
  const pool = new pg.Pool({ connectionString: await newDatabase() });
  await pool.end();
  const reads = new PipelinedReads(pool, isOutage);
  const refused = await reads.query('select 1 as n', [], 'pipeline-one').then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.match(String(refused), /after calling end/);
  const answer = faultOf(refused);
  assert.instance(answer, ApiError);
  assert.is((answer as ApiError).codeName, 'UNAVAILABLE');
});

test('a connection that ends under a read or a transaction fails their statements, and the process goes on', async () => {
  await withPool({ max: 2 }, async (pool) => {
    // Not taken for an outage: the reads after the terminated one are sent again on the same connection, which ends.
    const reads = new PipelinedReads(pool, () => false);
    const client = await pool.connect();
    const transaction = new PipelinedStatements(client);
    void transaction.query('begin', [], undefined, undefined, true).catch(() => undefined);
    await transaction.query('select 1', [], undefined);
    const asked = [
      reads.query('select pg_sleep(2)', [], 'pipeline-sleep'),
      reads.query('select 1 as n', [], 'pipeline-one'),
      transaction.query('select pg_sleep(2)', [], 'pipeline-sleep'),
    ];
    const answered = outcomes(asked, 4000);
    // Both connections, each in its pg_sleep.
    assert.is(await endSleepers(pool), 2);
    const [read, after, slept] = await answered;
    client.release(new Error('ended'));
    assert.is(read, '57P01');
    assert.match(String(after), /terminated|not queryable/i);
    assert.is(slept, '57P01');
    // The process is still here, and the pool connects anew.
    assert.equal((await reads.query('select 1 as n', [], 'pipeline-one')).rows, [{ n: 1 }]);
  });
});

test('a statement parsed after an unnamed one and skipped after a failure is parsed when sent again', async () => {
  await withPool({ max: 1, statement_timeout: 200 }, async (pool) => {
    const reads = new PipelinedReads(pool, () => false);
    const fresh = () => reads.query('select 2 as n', [], 'pipeline-fresh');
    const batch = [
      reads.query('select 1 as n', [], undefined),
      reads.query('select pg_sleep(1)', [], 'pipeline-slow'),
      fresh(),
    ];
    assert.equal(await outcomes(batch, 3000), [[{ n: 1 }], '57014', [{ n: 2 }]]);
    assert.equal((await fresh()).rows, [{ n: 2 }]);
  });
});

test('reads that may take long each go alone: none waits behind another; reads waiting for a connection are counted', async () => {
  await withPool({ max: 2 }, async (pool) => {
    const alone = new PipelinedReads(pool, () => false, 1);
    const order: string[] = [];
    const slow = alone.query('select pg_sleep(0.5)', [], 'pipeline-sleep').then(() => order.push('slow'));
    const quick = alone.query('select 1 as n', [], 'pipeline-one').then(() => order.push('quick'));
    await Promise.all([slow, quick]);
    assert.equal(order, ['quick', 'slow']);
    // Both connections held: three reads wait for one, then none.
    const held = await Promise.all([pool.connect(), pool.connect()]);
    const waiting = [1, 2, 3].map(() => alone.query('select 1 as n', [], 'pipeline-one'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.is(alone.waiting(), 3);
    for (const c of held) c.release();
    await Promise.all(waiting);
    assert.is(alone.waiting(), 0);
  });
});

test('a row the driver cannot read fails its own read only', async () => {
  const point = 600 as never; // PostgreSQL's point: no parser of pg's own
  pg.types.setTypeParser(point, () => {
    throw new Error('unreadable point');
  });
  try {
    await withPool({ max: 1 }, async (pool) => {
      const reads = new PipelinedReads(pool, () => false);
      const batch = [
        reads.query("select point '(1,2)' as p", [], 'pipeline-point'),
        reads.query('select 1 / 0 as q', [], 'pipeline-zero'),
        reads.query('select 1 as n', [], 'pipeline-one'),
      ];
      assert.equal(await outcomes(batch, 3000), ['Error: unreadable point', '22012', [{ n: 1 }]]);
    });
  } finally {
    pg.types.setTypeParser(point, (v: string) => v);
  }
});

// Issue 29, item 4: the witness's grants go with the lock of the parent (create) or the record (patch), and the
// write's statements with the commit. Before: three round trips each (eight and five before the batches).
test('through a server: a create and a patch are two round trips each, counted on the wire', async () => {
  const counter = await countRoundTrips(await newDatabase());
  const s = await startTestServer(undefined, { DATABASE_URL: counter.url, EVENTS: 'off' });
  try {
    const root = s.bootstrap.organization;
    const first = await s.call('POST', `/registry/v2/repos/${root}`, { name: 'warm' });
    assert.is(first.status, 200, JSON.stringify(first.body));
    const writes = 40;
    // Round trips of a window of writes, and what the server's own loops may add meanwhile: the signing keys are
    // looked at every 250 ms, the access listener's connection every 10 s.
    const counted = async (write: (i: number) => Promise<{ status: number; body: unknown }>) => {
      const [before, started] = [counter.roundTrips(), Date.now()];
      for (let i = 0; i < writes; i++) {
        const r = await write(i);
        assert.is(r.status, 200, JSON.stringify(r.body));
      }
      const ms = Date.now() - started;
      return { n: counter.roundTrips() - before, loops: Math.ceil(ms / 250) + Math.ceil(ms / 10_000) + 1 };
    };
    const creates = await counted((i) => s.call('POST', `/registry/v2/repos/${root}`, { name: `counted-${i}` }));
    const patches = await counted((i) =>
      s.call('PATCH', `/registry/v2/repos/${first.body.uid}`, { description: `patch ${i}` }),
    );
    for (const [what, { n, loops }] of [
      ['creates', creates],
      ['patches', patches],
    ] as const) {
      assert.ok(n >= 2 * writes, `${what}: ${n} round trips for ${writes}`);
      assert.ok(n <= 2 * writes + loops, `${what}: ${n} round trips for ${writes} (${loops} allowed to other loops)`);
    }
  } finally {
    await s.stop();
    await counter.close();
  }
});

test.run();
