// Reads that may take long, on a read-only connection in a worker thread (runtime/storage/read-worker.js), so that the
// main thread keeps answering: what a statement there costs is the answer's latency alone. One read runs at a
// time and at most `queue` wait behind it (past that: UNAVAILABLE, retry after a second). A read that runs past
// its time is answered DEADLINE_EXCEEDED at once and its worker replaced by a new one: SQLite cannot be
// interrupted through its driver (terminate() takes effect only when the statement returns), so the abandoned
// thread ends with its statement, and while `maxAbandoned` of them still run no new read starts. A worker that
// fails (its database file gone or unreadable) is replaced when a read needs one, not at once, and not again before a
// delay that doubles with each failure in a row (up to 30 s): reads meanwhile are UNAVAILABLE. Replaced at once, a
// worker that cannot open its file failed again and again, a thread made and lost in a tight loop.
import { Worker } from 'node:worker_threads';
import { deadlineExceeded, unavailable } from '../model/errors.js';
import type { Row } from '../model/records.js';
import type { ReadConnection } from './sql.js';
import type { ReadLimits } from './store.js';

/** Abandoned statements still running on their own threads before new reads wait for one to end. */
const maxAbandoned = 2;
/** The longest wait before a failed worker is replaced. */
const maxReplaceDelayMs = 30_000;

interface Answer {
  id: number;
  rows?: Row[] | unknown[][] | number;
  error?: string;
}

interface Job {
  id: number;
  /** a statement, or (kept) the worker's count of prepared statements */
  message: { sql?: string; params?: unknown[]; raw?: boolean; kept?: boolean };
  resolve(rows: unknown): void;
  reject(e: Error): void;
}

export interface SlowReads extends ReadConnection {
  /** The statements the worker keeps prepared. */
  statementsKept(): Promise<number>;
}

export function openSlowReads(file: string, limits: ReadLimits): SlowReads {
  const waiting: Job[] = [];
  let running: Job | undefined;
  let timer: NodeJS.Timeout | undefined;
  let abandoned = 0;
  let closed = false;
  let next = 0;
  /** failures of workers in a row, and when the next may be made */
  let failures = 0;
  let replaceAt = 0;
  const cannotRead = () =>
    unavailable('the database file cannot be read', Math.max(1, Math.ceil((replaceAt - Date.now()) / 1000)));

  const start = (): Worker => {
    const w = new Worker(new URL('./read-worker.js', import.meta.url), { workerData: { file } });
    w.on('message', ({ id, rows, error }: Answer) => {
      failures = 0;
      if (w !== worker || running?.id !== id) return;
      const job = finish();
      if (error !== undefined) job.reject(new Error(error));
      else job.resolve(rows ?? []);
    });
    w.on('error', () => {
      if (w !== worker) return;
      worker = undefined;
      failures++;
      replaceAt = Date.now() + Math.min(maxReplaceDelayMs, 100 * 2 ** failures);
      if (running) finish().reject(cannotRead());
    });
    // An idle worker does not keep the process alive; one with a read in flight does.
    w.unref();
    return w;
  };
  let worker: Worker | undefined = start();

  /** The running job, done with: the next one starts. */
  const finish = (): Job => {
    const job = running!;
    clearTimeout(timer);
    running = undefined;
    queueMicrotask(pump);
    return job;
  };

  const expire = () => {
    const old = worker!;
    abandoned++;
    old.unref();
    void old.terminate().finally(() => {
      abandoned--;
      pump();
    });
    worker = start();
    finish().reject(deadlineExceeded(limits.timeoutMs / 1000));
  };

  function pump(): void {
    if (running || closed || abandoned >= maxAbandoned) return;
    if (!worker && waiting.length > 0) {
      if (Date.now() < replaceAt) {
        for (const job of waiting.splice(0)) job.reject(cannotRead());
        return;
      }
      worker = start();
    }
    const job = waiting.shift();
    if (!job || !worker) {
      worker?.unref();
      return;
    }
    running = job;
    worker.ref();
    timer = setTimeout(expire, limits.timeoutMs);
    worker.postMessage({ id: job.id, ...job.message });
  }

  const enqueue = <R>(message: Job['message']) =>
    new Promise<R>((resolve, reject) => {
      if (closed) return reject(new Error('slow reads are closed'));
      if (waiting.length >= limits.queue)
        return reject(unavailable(`${waiting.length} reads are already waiting for the database`, 1));
      waiting.push({ id: next++, message, resolve: resolve as (rows: unknown) => void, reject });
      pump();
    });

  const read = <R extends Row | unknown[]>(sql: string, params: unknown[], raw: boolean) =>
    enqueue<R[]>({ sql, params: params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : (p ?? null))), raw });

  return {
    all: (sql, params = []) => read<Row>(sql, params, false),
    values: (sql, params = []) => read<unknown[]>(sql, params, true),
    run: async () => {
      throw new Error('slow reads are read-only');
    },
    statementsKept: () => enqueue<number>({ kept: true }),
    close: async () => {
      closed = true;
      for (const job of waiting.splice(0)) job.reject(new Error('slow reads are closed'));
      await worker?.terminate();
    },
  };
}
