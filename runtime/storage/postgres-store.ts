// The PostgreSQL store (DATABASE_URL=postgres://...): several server processes on one database. MikroORM makes
// and updates the tables, under an advisory lock so that instances starting together do it once; statements of
// our own go through a pg pool, written with `?` and numbered here. No lock wider than the rows a write reads
// and depends on: the runtime locks those rows itself (a parent FOR KEY SHARE, the record FOR UPDATE, the grants
// it relies on), unique indexes keep natural keys, and a write whose checks span rows no row lock covers runs
// SERIALIZABLE. A write that loses a race (40001, 40P01) is run again, a bounded number of times, then ABORTED.
import { createHash, randomUUID } from 'node:crypto';
import type { EntitySchema } from '@mikro-orm/core';
import { MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { aborted, ConfigError, deadlineExceeded, unavailable } from '../model/errors.js';
import { postgresql } from './dialect.js';
import type { Row } from '../model/records.js';
import { buildCounts, CountChanges } from './scope-counts.js';
import { migrate, type StoredSchema } from './schema-versions.js';
import { serverStateEntity } from './server-state.js';
import { together, type Sql } from './sql.js';
import { PipelinedReads, PipelinedStatements } from './postgres-pipeline.js';
import { countedTables, storedEntities, type ReadLimits, type Store, type TransactionOptions } from './store.js';
import { faultOf, isLostRace, isOutage } from './postgres-faults.js';

/** The advisory lock key of the schema at start (and of the counts built once after it). */
const schemaLock = 0x706c6101;

/** `?` placeholders as PostgreSQL's $1, $2, ...; our statements hold no `?` but placeholders. */
const numbered = new Map<string, string>();
function numberedText(text: string): string {
  let out = numbered.get(text);
  if (out === undefined) {
    let n = 0;
    out = text.replace(/\?/g, () => `$${++n}`);
    if (numbered.size > 2000) numbered.clear();
    numbered.set(text, out);
  }
  return out;
}

/**
 * Statements prepared by name on each pooled connection: parsed and planned there once, then only bound and run
 * (pg sends the Parse the first time a connection sees a name). Bounded: the first shapes of statement get names,
 * any beyond run unnamed, so no connection keeps an unbounded number. Our statements name every column they read
 * and a migration only adds columns and tables, so a prepared statement's result type never changes under it
 * ("cached plan must not change result type"): PostgreSQL replans it after the DDL by itself.
 */
const maxNamed = 500;
const names = new Map<string, string>();
function nameOf(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < maxNamed) {
    name = `p${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/** PostgreSQL's query_canceled: here, a statement past the connection's statement_timeout. */
const queryCanceled = '57014';
/** PostgreSQL's deadlock_detected (the other lost race is serialization_failure, 40001). */
const deadlockDetected = '40P01';

/**
 * Statements on the pool (each on any free connection), or in one transaction, sent in batches
 * (runtime/storage/postgres-pipeline.ts). On the pool, reads: past `limits.queue` waiting for a connection one
 * is refused, and one stopped by the statement timeout is DEADLINE_EXCEEDED.
 */
function sqlOn(
  client: PipelinedReads | PipelinedStatements,
  limits?: ReadLimits & { waiting: () => number },
  counts?: CountChanges,
  atCommit?: Promise<unknown>[],
): Sql {
  const read = async <R extends Row | unknown[]>(query: () => Promise<pg.QueryResult<R>>) => {
    if (limits && limits.waiting() >= limits.queue)
      throw unavailable(`${limits.waiting()} reads are already waiting for the database`, 1);
    try {
      return await query();
    } catch (e) {
      if ((e as { code?: string }).code === queryCanceled && limits) throw deadlineExceeded(limits.timeoutMs / 1000);
      throw faultOf(e);
    }
  };
  const query = <R extends Row | unknown[]>(
    text: string,
    params: unknown[],
    rowMode?: 'array',
  ): Promise<pg.QueryResult<R>> => {
    const numberedSql = numberedText(text);
    const run = () => client.query(numberedSql, params, nameOf(numberedSql), rowMode) as Promise<pg.QueryResult<R>>;
    return client instanceof PipelinedReads ? read<R>(run) : run();
  };
  return {
    all: async (text, params = []) => (await query<Row>(text, params)).rows,
    values: async (text, params = []) => (await query<unknown[]>(text, params, 'array')).rows,
    run: async (text, params = []) => (await query(text, params)).rowCount ?? 0,
    ...(counts && { counts }),
    ...(atCommit && {
      atCommit: (statements: Promise<unknown>) => {
        // Waited for at the commit (runtime/storage/postgres-store.ts's finishTransaction), or else seen failed.
        statements.catch(() => undefined);
        atCommit.push(statements);
      },
    }),
  };
}

/** MikroORM on the database, the tables not yet compared with the model (npm run migrate reads them first). */
export function openPostgresOrm(url: string, entities: EntitySchema[]): Promise<MikroORM> {
  return MikroORM.init({
    clientUrl: url,
    // server_state: what instances share besides the records (SQLite keeps it in DATA_DIR's files)
    entities: [...storedEntities(entities), serverStateEntity as EntitySchema],
    debug: false,
    allowGlobalContext: false,
    pool: { min: 0, max: 2 },
  });
}

/** The host and database of a URL, never its password: what an error may say. */
function place(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || 5432}${u.pathname}`;
}

/** Texts whose order differs between byte order and the usual linguistic ones (ICU puts a_b before a-b). */
const sortProbe = ['a-b', 'a_b', 'a b', 'ab', 'A', 'a', 'B', 'z', '~', '0', '.x'];

/**
 * uid ranges and page cursors compare text byte by byte: the database's own ordering is checked by sorting
 * probes with it, not only by its collation's name (an ICU database may name C and sort otherwise).
 */
async function checkCollation(pool: pg.Pool, url: string): Promise<void> {
  const { rows } = await pool.query<{ datcollate: string; sorted: string[] }>(
    'select datcollate, (select array_agg(s order by s) from unnest($1::text[]) s) as sorted ' +
      'from pg_database where datname = current_database()',
    [sortProbe],
  );
  const collation = rows[0]?.datcollate ?? '';
  const bytewise = [...sortProbe].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  if (!/^(C|POSIX|C\.utf-?8)$/i.test(collation) || rows[0].sorted.join('\n') !== bytewise.join('\n'))
    throw new ConfigError(
      `DATABASE_URL: the database ${place(url)} sorts text in the order of its collation ${collation}, not byte ` +
        'by byte; the server needs C (create it with: createdb --locale=C --locale-provider=libc --template=template0 NAME)',
    );
}

/** The schema brought to the model under the advisory lock: instances starting together migrate once. */
async function migrateLocked(pool: pg.Pool, orm: MikroORM, schema: StoredSchema | number): Promise<void> {
  const schemaClient = await pool.connect();
  try {
    // Waiting for another instance's migration is no read: no timeout (reset before the connection goes back).
    await schemaClient.query('set statement_timeout = 0');
    await schemaClient.query('select pg_advisory_lock($1)', [schemaLock]);
    await migrate(orm, schema);
  } finally {
    await schemaClient.query('select pg_advisory_unlock($1)', [schemaLock]).catch(() => undefined);
    await schemaClient.query('reset statement_timeout').catch(() => undefined);
    schemaClient.release();
  }
}

/** Connections of a process's pool. */
const poolSize = 20;
/**
 * Write transactions of a process holding a connection at once. A hand-written step may read through the pool
 * while its write holds row locks, so writers waiting for a lock must never hold every connection: the one
 * holding it would wait for a connection forever (seen with the former global write lock: nine writers waiting
 * on it, the tenth idle in its transaction). No transaction waits for a pool connection while holding a lock.
 */
const maxWriters = poolSize / 2;
/** Runs of a write that lost a race (serialization failure, deadlock) before it is answered ABORTED. */
const maxAttempts = 8;

/**
 * A counting semaphore of numbered slots: take() resolves to a free slot's number, give() frees it. A writer's
 * slot picks the shard of the per-scope counts it adds to: concurrent writers of one process share no count row.
 */
class WriterSlots {
  private readonly queue: ((slot: number) => void)[] = [];
  private readonly free: number[];
  constructor(slots: number) {
    this.free = Array.from({ length: slots }, (_, n) => n);
  }

  take(): Promise<number> {
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise((resolve) => this.queue.push(resolve));
  }

  give(slot: number): void {
    const next = this.queue.shift();
    if (next) next(slot);
    else this.free.push(slot);
  }
}

/** Write transactions run again, by why (a PostgreSQL error code), and answered ABORTED after the last run. */
export interface LostRaces {
  serialization: number;
  deadlock: number;
  aborted: number;
}

export async function openPostgresStore(
  url: string,
  entities: EntitySchema[],
  schema: StoredSchema | number,
  limits: ReadLimits,
): Promise<Store> {
  // Every statement of the pool's connections is stopped past the read timeout; write transactions lift it
  // for themselves (their lock wait and statements are the runtime's own, bounded by construction).
  // A database that does not answer a connection attempt is an outage after 5 s, not a request held forever.
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    statement_timeout: limits.timeoutMs,
    connectionTimeoutMillis: 5000,
    keepAlive: true,
  });
  // An idle client's error (the server went away) must not end the process: the next query reports it.
  pool.on('error', () => undefined);
  try {
    await pool.query('select 1');
  } catch (e) {
    await pool.end();
    throw new ConfigError(`DATABASE_URL: cannot use PostgreSQL at ${place(url)}: ${(e as Error).message}`);
  }
  let orm: MikroORM | undefined;
  try {
    await checkCollation(pool, url);
    orm = await openPostgresOrm(url, entities);
    await migrateLocked(pool, orm, schema);
  } catch (e) {
    // A refused database leaves no connection open: a caller that goes on (a test, a CLI) can still exit.
    await orm?.close();
    await pool.end();
    throw e;
  }
  // Reads that may take long each go alone: none waits in a batch behind another's long read.
  const [reads, slowReads] = [new PipelinedReads(pool, isOutage), new PipelinedReads(pool, isOutage, 1)];
  const readsWaiting = () => reads.waiting() + slowReads.waiting();
  const read = sqlOn(reads, { ...limits, waiting: readsWaiting });
  const slowRead = sqlOn(slowReads, { ...limits, waiting: readsWaiting });
  // Write transactions of this process waiting for a connection (the metrics' queue depth).
  let waiting = 0;
  const writers = new WriterSlots(maxWriters);
  // Where this process's writers start among the count shards: another instance's writers mostly elsewhere.
  const firstShard = Math.floor(Math.random() * postgresql.countShards);
  const once = async <T>(fn: (sql: Sql) => Promise<T>, serializable: boolean): Promise<T> => {
    waiting++;
    let client: pg.PoolClient | undefined;
    const slot = await writers.take();
    try {
      client = await pool.connect();
    } catch (e) {
      writers.give(slot);
      throw e;
    } finally {
      waiting--;
    }
    const counts = new CountChanges(postgresql.countShards, firstShard + slot);
    const begin = [`begin${serializable ? ' isolation level serializable' : ''}`, 'set local statement_timeout = 0'];
    return finishTransaction(client, begin, fn, counts).finally(() => writers.give(slot));
  };
  const lost: LostRaces = { serialization: 0, deadlock: 0, aborted: 0 };
  const transaction = async <T>(fn: (sql: Sql) => Promise<T>, options: TransactionOptions = {}): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(fn, options.serializable === true);
      } catch (e) {
        if (!isLostRace(e)) throw faultOf(e);
        lost[(e as { code: string }).code === deadlockDetected ? 'deadlock' : 'serialization']++;
        if (attempt === maxAttempts) {
          lost.aborted++;
          throw aborted(`the write lost to concurrent writes ${attempt} times`);
        }
        // Jittered, doubling: racers that collided once do not collide again in step.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 ** attempt * 2));
      }
    }
  };
  // Counted once, by the first instance to get the schema's lock.
  await transaction(async (sql) => {
    await sql.all('select pg_advisory_xact_lock(?)', [schemaLock]);
    await buildCounts(sql, countedTables(orm));
  });
  const access = await listenForAccessChanges(url);
  // The catalog's views are slow to read, and no caller's read: without the read timeout.
  const fingerprint = () => withoutTimeout(pool, schemaFingerprint);
  const started = await fingerprint();
  return {
    orm,
    dialect: postgresql,
    read,
    slowRead,
    transaction,
    schemaChanged: async () => (await fingerprint()) !== started,
    writeQueueDepth: () => waiting,
    lostRaces: () => lost,
    // The numbered texts kept; up to maxNamed of them are also prepared by name on each connection.
    statementsKept: async () => numbered.size,
    accessChanges: {
      announce: () =>
        void pool.query(`select pg_notify('${accessChannel}', $1)`, [access.instance]).catch(() => undefined),
      subscribe: (heard) => access.heard.add(heard),
    },
    close: async () => {
      await access.close();
      await orm.close();
      await pool.end();
    },
  };
}

/** Statements of the runtime's own on one connection, in a read transaction without the read timeout. */
async function withoutTimeout<T>(pool: pg.Pool, fn: (sql: Sql) => Promise<T>): Promise<T> {
  return finishTransaction(await pool.connect(), ['begin read only', 'set local statement_timeout = 0'], fn);
}

/**
 * A transaction on client: its begin sent with its first statement, then fn, then its count changes (last, in
 * one order: see runtime/storage/scope-counts.ts) sent with the commit; rollback when anything failed; client
 * released. A transaction that sent no statement sends nothing.
 */
async function finishTransaction<T>(
  client: pg.PoolClient,
  begin: string[],
  fn: (sql: Sql) => Promise<T>,
  counts?: CountChanges,
): Promise<T> {
  const statements = new PipelinedStatements(client);
  const started = begin.map((text) => statements.query(text, [], nameOf(text), undefined, true));
  // Their failure is the first statement's too, which fn sees.
  for (const s of started) s.catch(() => undefined);
  // Statements left to the commit (Sql.atCommit); one that failed failed first: its error is the transaction's.
  const left: Promise<unknown>[] = [];
  let failed: Error | undefined;
  try {
    const sql = sqlOn(statements, undefined, counts, left);
    const result = await fn(sql);
    if (counts?.pending() || statements.asked) {
      // Asked for in this turn: sent in one batch with whatever fn left to the commit.
      const committed = together([counts?.write(sql), sql.run('commit')]);
      committed.catch(() => undefined);
      await together(left);
      await committed;
    }
    return result;
  } catch (e) {
    if (statements.asked) await sql0(statements, 'rollback');
    const cause = (await firstFailure(left)) ?? e;
    // A connection lost under the transaction is not given back to the pool: the next call connects anew.
    failed = isOutage(cause) ? (cause as Error) : undefined;
    throw cause;
  } finally {
    client.release(failed);
  }
}

/** The error of the first of these that failed (they have all settled), if one did. */
async function firstFailure(statements: Promise<unknown>[]): Promise<unknown> {
  for (const s of statements) {
    const failure = await s.then(
      () => undefined,
      (e: unknown) => e ?? new Error('failed'),
    );
    if (failure !== undefined) return failure;
  }
  return undefined;
}

/** A statement of the transaction's own whose failure changes nothing (a rollback after a failure). */
const sql0 = (statements: PipelinedStatements, text: string) =>
  statements.query(text, [], nameOf(text)).then(
    () => undefined,
    () => undefined,
  );

const accessChannel = 'platform_access_changed';

/** The tables and columns of the schema as one hash: PostgreSQL keeps no counter of schema changes. */
async function schemaFingerprint(read: Sql): Promise<string> {
  const [row] = await read.all(
    "select md5(string_agg(table_name || '.' || column_name || ':' || data_type, ',' order by table_name, column_name)) as f " +
      'from information_schema.columns where table_schema = current_schema()',
  );
  return String(row.f);
}

/** The listening connection's name in pg_stat_activity (application_name). */
export const accessListenerName = 'platform-access-listener';

/** How often the listening connection is proven alive by a query, how long the query may take, and the wait to reconnect. */
const listenerProbeMs = 10_000;
const listenerProbeTimeoutMs = 5_000;
const listenerRetryMs = 1_000;
/** The longest wait between attempts to listen again: the waits double from listenerRetryMs while they fail. */
const listenerRetryMaxMs = 10_000;

/**
 * One connection listening for other processes' access changes. A connection can die silently (a dropped NAT
 * entry, a failover): TCP keepalive and a query every 10 s find it out. While none listens, changes go unheard:
 * every listener is told (caches dropped) when the connection is lost, at each failed attempt to connect again,
 * and once listening again; the grants' time limit bounds whatever is left.
 */
async function listenForAccessChanges(url: string) {
  const heard = new Set<() => void>();
  const tell = () => heard.forEach((f) => f());
  // Each process names itself in its notifications: its own changes it has already heard, at the commit.
  const instance = randomUUID();
  const notified = (n: pg.Notification) => n.payload !== instance && tell();
  let client: pg.Client | undefined;
  let probe: NodeJS.Timeout | undefined;
  let closed = false;
  let retries = 0;
  const again = () => {
    if (!closed) setTimeout(reconnect, Math.min(listenerRetryMaxMs, listenerRetryMs * 2 ** retries++)).unref();
  };
  const lost = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    clearInterval(probe);
    tell();
    void c.end().catch(() => undefined);
    again();
  };
  const alive = (c: pg.Client) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer')), listenerProbeTimeoutMs);
    });
    Promise.race([c.query('select 1'), late])
      .catch(() => lost(c))
      .finally(() => clearTimeout(timer));
  };
  const connect = async () => {
    const c = new pg.Client({
      connectionString: url,
      keepAlive: true,
      keepAliveInitialDelayMillis: listenerProbeMs,
      application_name: accessListenerName,
    });
    c.on('notification', notified);
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    try {
      await c.connect();
      await c.query(`listen ${accessChannel}`);
    } catch (e) {
      await c.end().catch(() => undefined);
      throw e;
    }
    if (closed) return void (await c.end().catch(() => undefined));
    client = c;
    probe = setInterval(() => alive(c), listenerProbeMs).unref();
  };
  const reconnect = () =>
    void connect().then(
      // What was cached while no connection listened may be stale.
      () => {
        retries = 0;
        tell();
      },
      () => {
        tell();
        again();
      },
    );
  await connect();
  return {
    heard,
    instance,
    close: async () => {
      closed = true;
      clearInterval(probe);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
