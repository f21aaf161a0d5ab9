// Statements of our own on the store's SQLite connections.
// - Writes borrow the one connection of the ORM's pool, so our statements and the ORM's queue behind each
//   other (transactions: runtime/group-commit.ts).
// - Reads outside a transaction go to a second, read-only connection. Under WAL it sees every committed write
//   and is never blocked by the writer; its statements queue in the driver, where borrowing the pool's
//   connection would hold it idle between a statement and the event loop getting round to its result.
import sqlite3 from 'sqlite3';
import type { Row } from './records.js';

/** The sqlite3 driver's Statement and Database, as much of them as we use. */
interface Sqlite3Statement {
  all(params: unknown[], callback: (error: Error | null, rows: Row[]) => void): void;
  run(params: unknown[], callback: (this: { changes: number }, error: Error | null) => void): void;
  finalize(callback?: () => void): void;
}
interface Sqlite3Database {
  prepare(sql: string, callback: (error: Error | null) => void): Sqlite3Statement;
}

/** What knex's client offers for borrowing a connection from its pool. */
export interface ConnectionPool {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

export interface Sql {
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs a statement; resolves to the number of rows it changed. */
  run(sql: string, params?: unknown[]): Promise<number>;
}

/**
 * Statements prepared once per connection and text: preparing the runtime's select of every column costs as
 * much again as running it, and on the writing connection preparing takes the connection's time too.
 */
class PreparedStatements {
  private readonly statements = new Map<string, Promise<Sqlite3Statement>>();
  private static readonly max = 500;

  constructor(private readonly db: Sqlite3Database) {}

  get(sql: string): Promise<Sqlite3Statement> {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= PreparedStatements.max) {
        const [oldest, old] = this.statements.entries().next().value!;
        this.statements.delete(oldest);
        void old.then(
          (s) => s.finalize(),
          () => undefined,
        );
      }
      statement = new Promise((resolve, reject) => {
        const prepared = this.db.prepare(sql, (e) => (e ? reject(e) : resolve(prepared)));
      });
      // A statement that does not prepare fails its caller and is not kept.
      statement.catch(() => this.statements.delete(sql));
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** The connection cannot close while statements exist. */
  async finalizeAll(): Promise<void> {
    const all = await Promise.allSettled(this.statements.values());
    this.statements.clear();
    await Promise.all(
      all.map((o) =>
        o.status === 'fulfilled' ? new Promise<void>((resolve) => o.value.finalize(() => resolve())) : undefined,
      ),
    );
  }
}

/**
 * Statements on one connection through its prepared statements. The driver runs a prepared statement as soon
 * as it is given it, in parallel with any before it (its serialized mode orders only statements it prepares
 * itself), so on the writing connection, `inOrder`, a statement starts only when the one before it has
 * finished: callers may send a transaction's statements without waiting for each.
 */
function preparedSqlOf(statements: PreparedStatements, inOrder: boolean): Sql {
  let previous: Promise<unknown> = Promise.resolve();
  const send = <T>(
    sql: string,
    go: (statement: Sqlite3Statement, done: (e: Error | null, value: T) => void) => void,
  ): Promise<T> => {
    const ready = statements.get(sql);
    const run = (inOrder ? previous.then(() => ready) : ready).then(
      (statement) => new Promise<T>((resolve, reject) => go(statement, (e, value) => (e ? reject(e) : resolve(value)))),
    );
    if (inOrder) previous = run.catch(() => undefined);
    return run;
  };
  return {
    all: (sql, params = []) => send(sql, (statement, done) => statement.all(params, done)),
    run: (sql, params = []) =>
      send(sql, (statement, done) =>
        statement.run(params, function (e) {
          done(e, this.changes);
        }),
      ),
  };
}

export interface ReadConnection extends Sql {
  close(): Promise<void>;
}

/** A read-only connection to the database file. */
export async function openReadConnection(file: string): Promise<ReadConnection> {
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const opened: sqlite3.Database = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (e) =>
      e ? reject(e) : resolve(opened),
    );
  });
  db.configure('busyTimeout', 10_000);
  const statements = new PreparedStatements(db as unknown as Sqlite3Database);
  return {
    ...preparedSqlOf(statements, false),
    close: async () => {
      await statements.finalizeAll();
      await new Promise<void>((resolve) => db.close(() => resolve()));
    },
  };
}

const preparedOn = new WeakMap<Sqlite3Database, PreparedStatements>();

/** Finalizes what we prepared on the pool's connection: the pool cannot close it while statements exist. */
export async function finalizePrepared(pool: ConnectionPool): Promise<void> {
  const db = (await pool.acquireConnection()) as Sqlite3Database;
  try {
    await preparedOn.get(db)?.finalizeAll();
  } finally {
    await pool.releaseConnection(db);
  }
}

/**
 * Runs fn with the pool's connection to itself. Statements run strictly in the order they are sent, so a
 * statement may be sent before the one ahead of it has finished.
 */
export async function withConnection<T>(pool: ConnectionPool, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const db = (await pool.acquireConnection()) as Sqlite3Database;
  let statements = preparedOn.get(db);
  if (!statements) preparedOn.set(db, (statements = new PreparedStatements(db)));
  try {
    return await fn(preparedSqlOf(statements, true));
  } finally {
    await pool.releaseConnection(db);
  }
}

/**
 * Statements that do not depend on each other, sent without waiting for each. Settles only when every one
 * has finished, so a rollback after a failure cannot overtake one still running; then throws the first failure.
 */
export async function together(statements: (Promise<unknown> | undefined)[]): Promise<void> {
  const outcomes = await Promise.allSettled(statements);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}
