// SQLite's WAL is copied into the database file by a worker thread (runtime/storage/wal-checkpoints.ts), not by
// the commit that fills it on the event loop: writes reach the database file itself within moments, and the
// WAL does not grow without end.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer } from './support/server.js';

test('writes reach the database file itself, checkpointed off the event loop, within a second', async () => {
  const s = await startTestServer();
  const copies = mkdtempSync(join(tmpdir(), 'platform-api-wal-'));
  try {
    if (s.database.engine !== 'sqlite') return;
    const org = s.bootstrap.organization;
    const names = ['a', 'b', 'c'].map((n) => `checkpointed ${n}`);
    for (const name of names) assert.is((await s.call('POST', `/iam/v2/groups/${org}`, { name })).status, 200);
    // The database file alone, without its WAL: what a checkpoint has copied into it.
    const inFile = () => {
      const copy = join(copies, `copy-${Date.now()}.sqlite`);
      copyFileSync(s.database.engine === 'sqlite' ? s.database.file : '', copy);
      const db = new Database(copy, { readonly: true });
      try {
        // Before the first checkpoint even the tables are in the WAL alone.
        const made = db.prepare("select count(*) as n from sqlite_master where name = 'groups'").get() as { n: number };
        if (made.n === 0) return 0;
        return (db.prepare('select count(*) as n from groups where name like ?').get('checkpointed %') as { n: number })
          .n;
      } finally {
        db.close();
      }
    };
    let found = 0;
    for (let i = 0; i < 30 && found < names.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      found = inFile();
    }
    assert.is(found, names.length, 'the groups are in the database file, not only in its WAL');
  } finally {
    rmSync(copies, { recursive: true, force: true });
    await s.stop();
  }
});

test.run();
