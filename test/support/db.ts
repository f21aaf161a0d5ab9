// Reads the server's SQLite file directly, as an operator would, for what the API does not show (the outbox).
// The same library as the server's (better-sqlite3): two SQLite builds in one process break each other's locks.
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** A statement on the database file; `write` opens it for writing (an operator's repair, an older version's data). */
export async function query(dataDir: string, sql: string, params: unknown[] = [], write = false): Promise<any[]> {
  const db = new Database(join(dataDir, 'platform.sqlite'), { readonly: !write, timeout: 10_000 });
  try {
    const statement = db.prepare(sql);
    if (statement.reader) return statement.all(...params);
    statement.run(...params);
    return [];
  } finally {
    db.close();
  }
}
