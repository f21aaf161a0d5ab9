// Statements of our own on the store's SQLite connections (better-sqlite3, the library the ORM uses too: two
// SQLite builds on one file in one process would break each other's locks).
// - Writes borrow the one connection of the ORM's pool, so our statements and the ORM's queue behind each
//   other (transactions: runtime/storage/group-commit.ts).
// - Reads outside a transaction go to a second, read-only connection. Under WAL it sees every committed write
//   and is never blocked by the writer.
// The driver is synchronous: a statement runs on the event loop, in microseconds for the index reads requests
// make (nothing on a request path scans a large range: totalCount comes from runtime/storage/scope-counts.ts).
import Database from 'better-sqlite3';
import type { Row } from '../model/records.js';

/** What knex's client offers for borrowing a connection from its pool. */
export interface ConnectionPool {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

export interface Sql {
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  /** The rows as arrays of their values in select-list order: no object per row, so cheaper for many rows. */
  values(sql: string, params?: unknown[]): Promise<unknown[][]>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(sql: string, params?: unknown[]): Promise<number>;
  /**
   * values, answered at once where the driver is synchronous (SQLite): for a read of a few rows by key, which
   * then costs no promise. Absent where the driver is not.
   */
  valuesNow?(sql: string, params?: unknown[]): unknown[][];
  /**
   * A transaction's per-scope count changes, written by the store just before its commit (PostgreSQL: see
   * runtime/storage/scope-counts.ts); absent where each insert and delete writes its own at once (SQLite).
   */
  counts?: PendingCounts;
  /**
   * Statements whose outcome only the commit needs (an insert's, an event's): the store waits for them with the
   * commit, so that on PostgreSQL they go in the commit's batch (one round trip). Their failure fails the
   * transaction, and is the error it throws. Absent where a statement costs no round trip (SQLite): wait for them.
   */
  atCommit?(statements: Promise<unknown>): void;
}

/** Count changes gathered in a transaction: a record of a table added (+1) or removed (-1). */
export interface PendingCounts {
  note(collection: string, uid: string, parentUid: string | null, delta: 1 | -1): unknown;
}

type Statement = Database.Statement<unknown[], Row>;

/**
 * Statements prepared once per connection and text: preparing costs as much again as running. `values` ones
 * answer rows as arrays, set once when prepared rather than switched around each run.
 */
class PreparedStatements {
  private readonly statements = new Map<string, Statement>();
  private static readonly max = 500;

  constructor(
    private readonly db: Database.Database,
    private readonly mode: 'rows' | 'values',
  ) {}

  get size(): number {
    return this.statements.size;
  }

  get(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= PreparedStatements.max) this.statements.delete(this.statements.keys().next().value!);
      statement = this.db.prepare<unknown[], Row>(sql);
      if (this.mode === 'values' && statement.reader) statement.raw(true);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/** A connection's prepared statements, in each of the two shapes of answer. */
interface Prepared {
  rows: PreparedStatements;
  values: PreparedStatements;
}

const prepare = (db: Database.Database): Prepared => ({
  rows: new PreparedStatements(db, 'rows'),
  values: new PreparedStatements(db, 'values'),
});

/** The driver binds numbers, strings, bigints, buffers and null; a boolean is stored as 1 or 0. */
const bindable = (params: unknown[]) =>
  params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p === undefined ? null : p));

/** Told how long each statement took, in seconds (the server's metrics). */
export type StatementTimer = (seconds: number) => void;

/**
 * The connection's statements as Sql; each timed, when a timer is given, around the driver's call itself: the
 * driver is synchronous, so that is the statement's whole time, with no promise of its own to wait for.
 */
function sqlOf(prepared: Prepared, timer?: StatementTimer): Sql {
  const all = (sql: string, params: unknown[]): Row[] => {
    const statement = prepared.rows.get(sql);
    if (statement.reader) return statement.all(...bindable(params));
    statement.run(...bindable(params));
    return [];
  };
  const values = (sql: string, params: unknown[]) =>
    prepared.values.get(sql).all(...bindable(params)) as unknown as unknown[][];
  const run = (sql: string, params: unknown[]) => prepared.rows.get(sql).run(...bindable(params)).changes;
  if (!timer) {
    return {
      all: async (sql, params = []) => all(sql, params),
      values: async (sql, params = []) => values(sql, params),
      run: async (sql, params = []) => run(sql, params),
      valuesNow: (sql, params = []) => values(sql, params),
    };
  }
  const timed = <T>(statement: (sql: string, params: unknown[]) => T, sql: string, params: unknown[]): T => {
    const started = performance.now();
    try {
      return statement(sql, params);
    } finally {
      timer((performance.now() - started) / 1000);
    }
  };
  return {
    all: async (sql, params = []) => timed(all, sql, params),
    values: async (sql, params = []) => timed(values, sql, params),
    run: async (sql, params = []) => timed(run, sql, params),
    valuesNow: (sql, params = []) => timed(values, sql, params),
  };
}

export interface ReadConnection extends Sql {
  close(): Promise<void>;
}

/** A read-only connection to the database file, and how many statements it keeps prepared. */
export async function openReadConnection(
  file: string,
  timer?: StatementTimer,
): Promise<ReadConnection & { statementsKept(): number }> {
  const db = new Database(file, { readonly: true, timeout: 10_000 });
  const prepared = prepare(db);
  return {
    ...sqlOf(prepared, timer),
    statementsKept: () => prepared.rows.size + prepared.values.size,
    close: async () => void db.close(),
  };
}

const preparedOn = new WeakMap<Database.Database, Prepared>();

/** Nothing to release before the pool closes its connection: better-sqlite3 finalizes with the connection. */
export async function finalizePrepared(_pool: ConnectionPool): Promise<void> {}

/** Runs fn with the pool's connection to itself. */
export async function withConnection<T>(
  pool: ConnectionPool,
  fn: (sql: Sql) => Promise<T>,
  timer?: StatementTimer,
): Promise<T> {
  const db = (await pool.acquireConnection()) as Database.Database;
  let prepared = preparedOn.get(db);
  if (!prepared) preparedOn.set(db, (prepared = prepare(db)));
  try {
    return await fn(sqlOf(prepared, timer));
  } finally {
    await pool.releaseConnection(db);
  }
}

/**
 * Statements that do not depend on each other, sent without waiting for each. Settles only when every one
 * has finished, so a rollback after a failure cannot overtake one still running; then throws the failure that
 * came first. On one transaction's connection those after it only say the transaction is aborted (25P02), which
 * would hide a serialization failure that is to be run again.
 */
export function together(statements: (Promise<unknown> | undefined)[]): Promise<void> {
  // One promise for them all (no Promise.all over a catch of each: every write waits on a few of these).
  return new Promise((resolve, reject) => {
    let left = 0;
    let first: { reason: unknown } | undefined;
    const settled = () => {
      if (--left > 0) return;
      if (first) reject(first.reason);
      else resolve();
    };
    const failed = (reason: unknown) => {
      first ??= { reason };
      settled();
    };
    for (const s of statements)
      if (s) {
        left++;
        s.then(settled, failed);
      }
    if (left === 0) resolve();
  });
}
