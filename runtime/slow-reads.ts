// Reads that may take long, on a read-only connection in a worker thread (runtime/read-worker.js), so that the
// main thread keeps answering: what a statement there costs is the answer's latency alone.
import { Worker } from 'node:worker_threads';
import type { Row } from './records.js';
import type { ReadConnection } from './sql.js';

interface Answer {
  id: number;
  rows?: Row[] | unknown[][];
  error?: string;
}

export function openSlowReads(file: string): ReadConnection {
  const worker = new Worker(new URL('./read-worker.js', import.meta.url), { workerData: { file } });
  const pending = new Map<number, { resolve: (rows: never[]) => void; reject: (e: Error) => void }>();
  let next = 0;
  worker.on('message', ({ id, rows, error }: Answer) => {
    const p = pending.get(id);
    pending.delete(id);
    if (error !== undefined) p?.reject(new Error(error));
    else p?.resolve((rows ?? []) as never[]);
  });
  worker.on('error', (e) => {
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  });
  // An idle worker does not keep the process alive; one with reads in flight does.
  worker.unref();
  const read = <R extends Row | unknown[]>(sql: string, params: unknown[], raw: boolean) =>
    new Promise<R[]>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      if (pending.size === 1) worker.ref();
      const bound = params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : (p ?? null)));
      worker.postMessage({ id, sql, params: bound, raw });
    }).finally(() => {
      if (pending.size === 0) worker.unref();
    });
  return {
    all: (sql, params = []) => read<Row>(sql, params, false),
    values: (sql, params = []) => read<unknown[]>(sql, params, true),
    run: async () => {
      throw new Error('slow reads are read-only');
    },
    close: async () => {
      await worker.terminate();
    },
  };
}
