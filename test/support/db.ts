// Reads a test server's database directly, as an operator would, for what the API does not show (the outbox).
// SQLite through the server's own library (better-sqlite3: two SQLite builds in one process break each other's
// locks); PostgreSQL through pg. Statements are written with `?`; rows come back in SQLite's shapes on either
// engine (JSON as its text, integers as numbers, booleans as 1 and 0), so a test reads the same on both.
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Database as Where } from '../../runtime/storage/store.js';

/** The types whose text PostgreSQL's driver would parse, kept as SQLite gives them. */
const sqliteShaped = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => {
    if (oid === 20) return (v: string) => Number(v); // int8: counts, sequence numbers
    if (oid === 114 || oid === 3802) return (v: string) => v; // json, jsonb: the text
    if (oid === 16) return (v: string) => (v === 't' ? 1 : 0); // bool
    return pg.types.getTypeParser(oid, format);
  },
};

/** A statement on the server's database; `write` allows changes on SQLite (an operator's repair, old data). */
export async function query(
  s: { database: Where },
  sql: string,
  params: unknown[] = [],
  write = false,
): Promise<any[]> {
  if (s.database.engine === 'postgresql') {
    const client = new pg.Client({ connectionString: s.database.url, types: sqliteShaped });
    await client.connect();
    try {
      let n = 0;
      return (
        await client.query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows;
    } finally {
      await client.end();
    }
  }
  const db = new Database(s.database.file, { readonly: !write, timeout: 10_000 });
  try {
    const statement = db.prepare(sql);
    if (statement.reader) return statement.all(...params);
    statement.run(...params);
    return [];
  } finally {
    db.close();
  }
}
