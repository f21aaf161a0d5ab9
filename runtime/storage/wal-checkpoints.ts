// SQLite's WAL checkpoints, off the event loop: the writing connection's automatic checkpoint is turned off
// (`pragma wal_autocheckpoint = 0`) and a worker thread (runtime/storage/checkpoint-worker.js) checkpoints every
// intervalMs while there were commits. An automatic checkpoint ran in the commit that filled the WAL to 1,000
// pages, on the event loop: with creates going on, every few hundred milliseconds one commit held every request
// for as long as copying 4 MB and two fsyncs took, which is what a list's p99 beside creates was made of.
import { Worker } from 'node:worker_threads';

/** Often enough that the WAL stays a few MB under steady writes (about what 1,000 pages, SQLite's default, is). */
const intervalMs = 200;

export interface WalCheckpoints {
  /** After a commit: the next turn checkpoints. */
  written(): void;
  close(): Promise<void>;
}

export function startWalCheckpoints(file: string): WalCheckpoints {
  const written = new Int32Array(new SharedArrayBuffer(4));
  const start = (): Worker => {
    const w = new Worker(new URL('./checkpoint-worker.js', import.meta.url), {
      workerData: { file, intervalMs, written: written.buffer },
    });
    // A worker that failed (its connection lost) is replaced, without one the WAL would grow without end, after a
    // delay of a second that doubles with each failure (up to 30 s): one that cannot open its file fails again at once.
    w.on('error', () => {
      failures++;
      retry = setTimeout(() => (closed ? undefined : (worker = start())), Math.min(30_000, 1000 * 2 ** (failures - 1)));
      retry.unref();
    });
    // It does not keep the process alive.
    w.unref();
    return w;
  };
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  let worker = start();
  return {
    written: () => Atomics.store(written, 0, 1),
    close: async () => {
      closed = true;
      clearTimeout(retry);
      await worker.terminate();
    },
  };
}
