// Statements of our own on the store's SQLite connection. The connection is borrowed from the ORM's pool (of
// one), so our statements and the ORM's queue behind each other: a read holds the connection for its
// statements, a transaction from BEGIN to COMMIT. Nothing else can run on it meanwhile, so a transaction needs
// no more than BEGIN IMMEDIATE (which also takes the file's write lock up front, waiting for another process
// such as an import rather than failing half-way).
import type { Row } from './records.js';

/** The sqlite3 driver's Database, as much of it as we use. */
interface Sqlite3Database {
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

function sqlOf(db: Sqlite3Database): Sql {
  return {
    all: (sql, params = []) => new Promise((resolve, reject) => db.all(sql, params, (e, rows) => (e ? reject(e) : resolve(rows)))),
    run: (sql, params = []) => new Promise((resolve, reject) => db.run(sql, params, function (e) { if (e) reject(e); else resolve(this.changes); })),
  };
}

/** Runs fn with the connection to itself. */
export async function withConnection<T>(pool: ConnectionPool, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const db = await pool.acquireConnection();
  try {
    return await fn(sqlOf(db as Sqlite3Database));
  } finally {
    await pool.releaseConnection(db);
  }
}

/** Runs fn in one transaction: every statement commits, or (when fn throws) none does. */
export async function inTransaction<T>(pool: ConnectionPool, fn: (sql: Sql) => Promise<T>): Promise<T> {
  return withConnection(pool, async (sql) => {
    await sql.run('begin immediate');
    let result: T;
    try {
      result = await fn(sql);
    } catch (e) {
      await sql.run('rollback');
      throw e;
    }
    try {
      await sql.run('commit');
    } catch (e) {
      await sql.run('rollback');
      throw e;
    }
    return result;
  });
}
