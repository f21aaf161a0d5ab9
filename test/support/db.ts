// Reads the server's SQLite file directly, as an operator would, for what the API does not show (the outbox).
import { createRequire } from 'node:module';
import { join } from 'node:path';

const sqlite3 = createRequire(import.meta.url)('sqlite3') as {
  Database: new (
    file: string,
    mode: number,
    cb: (e: Error | null) => void,
  ) => {
    all(sql: string, params: unknown[], cb: (e: Error | null, rows: any[]) => void): void;
    close(cb: () => void): void;
  };
  OPEN_READONLY: number;
  OPEN_READWRITE: number;
};

/** A statement on the database file; `write` opens it for writing (an operator's repair, an older version's data). */
export async function query(dataDir: string, sql: string, params: unknown[] = [], write = false): Promise<any[]> {
  const mode = write ? sqlite3.OPEN_READWRITE : sqlite3.OPEN_READONLY;
  const db = await new Promise<InstanceType<typeof sqlite3.Database>>((resolve, reject) => {
    const d = new sqlite3.Database(join(dataDir, 'platform.sqlite'), mode, (e) => (e ? reject(e) : resolve(d)));
  });
  try {
    return await new Promise((resolve, reject) => db.all(sql, params, (e, rows) => (e ? reject(e) : resolve(rows))));
  } finally {
    await new Promise<void>((r) => db.close(() => r()));
  }
}
