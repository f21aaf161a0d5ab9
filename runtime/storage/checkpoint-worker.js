// WAL checkpoints on a thread of their own (runtime/storage/wal-checkpoints.ts): copying the WAL's pages into the
// database file and syncing both takes milliseconds to tens of them, which on the writing connection (SQLite's
// automatic checkpoint runs in the commit that fills the WAL) would stall every request on the event loop.
// Plain JavaScript: a worker does not inherit a TypeScript loader.
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file);
// PASSIVE: copies what no reader still needs, never waits for a reader or the writer, and leaves the WAL to be
// started again from its beginning by the writer's next transaction once all of it is copied.
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
/** Set by the main thread after each commit, cleared here: no checkpoint while nothing was written. */
const written = new Int32Array(workerData.written);

setInterval(() => {
  if (Atomics.exchange(written, 0, 0) === 0) return;
  try {
    checkpoint.get();
  } catch {
    // Another process checkpoints or holds the file: the next turn tries again.
    Atomics.store(written, 0, 1);
  }
}, workerData.intervalMs);
