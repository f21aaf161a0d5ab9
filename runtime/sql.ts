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
  serialize(): void;
  prepare(sql: string, callback: (error: Error | null) => void): Sqlite3Statement;
  all(sql: string, params: unknown[], callback: (error: Error | null, rows: Row[]) => void): void;
  run(sql: string, params: unknown[], callback: (this: { changes: number }, error: Error | null) => void): void;
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
 * Statements prepared once per text, on the read connection: preparing the runtime's select of every column
 * costs as much again as running it. (Not on the writing connection: there statements are sent without
 * waiting, and one still being prepared would let a prepared one behind it run first.)
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
        void old.then((s) => s.finalize(), () => undefined);
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
    await Promise.all(all.map((o) => (o.status === 'fulfilled' ? new Promise<void>((resolve) => o.value.finalize(() => resolve())) : undefined)));
  }
}

function sqlOf(db: Sqlite3Database): Sql {
  return {
    all: (sql, params = []) => new Promise((resolve, reject) => db.all(sql, params, (e, rows) => (e ? reject(e) : resolve(rows)))),
    run: (sql, params = []) => new Promise((resolve, reject) => db.run(sql, params, function (e) { if (e) reject(e); else resolve(this.changes); })),
  };
}

function preparedSqlOf(statements: PreparedStatements): Sql {
  return {
    all: async (sql, params = []) => {
      const statement = await statements.get(sql);
      return new Promise((resolve, reject) => statement.all(params, (e, rows) => (e ? reject(e) : resolve(rows))));
    },
    run: async (sql, params = []) => {
      const statement = await statements.get(sql);
      return new Promise((resolve, reject) => statement.run(params, function (e) { if (e) reject(e); else resolve(this.changes); }));
    },
  };
}

export interface ReadConnection extends Sql {
  close(): Promise<void>;
}

/** A read-only connection to the database file. */
export async function openReadConnection(file: string): Promise<ReadConnection> {
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const opened: sqlite3.Database = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (e) => (e ? reject(e) : resolve(opened)));
  });
  db.configure('busyTimeout', 10_000);
  const statements = new PreparedStatements(db as unknown as Sqlite3Database);
  return {
    ...preparedSqlOf(statements),
    close: async () => {
      await statements.finalizeAll();
      await new Promise<void>((resolve) => db.close(() => resolve()));
    },
  };
}

/**
 * Runs fn with the pool's connection to itself. The connection runs statements strictly in the order they are
 * sent (the driver's serialized mode), so a statement may be sent before the one ahead of it has finished.
 */
export async function withConnection<T>(pool: ConnectionPool, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const db = await pool.acquireConnection();
  (db as Sqlite3Database).serialize();
  try {
    return await fn(sqlOf(db as Sqlite3Database));
  } finally {
    await pool.releaseConnection(db);
  }
}

/**
 * Statements sent together (one round trip to the driver's thread), for statements that do not depend on each
 * other. Settles only when every one has finished, so a rollback after a failure cannot overtake one still
 * running; then throws the first failure.
 */
export async function together(statements: (Promise<unknown> | undefined)[]): Promise<void> {
  const outcomes = await Promise.allSettled(statements);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}

