// A read-only connection on a worker thread, for the statements that may read a large range (a count over a
// filter, every match of a whole-result list): the driver is synchronous, and on the main thread such a
// statement would stall every other request. Plain JavaScript: a worker does not inherit a TypeScript loader.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file, { readonly: true, timeout: 10_000 });
/** Prepared once per text, at most 200: statement texts do not grow with the values they are given. */
const prepared = new Map();

parentPort.on('message', ({ id, sql, params, raw, kept }) => {
  if (kept) {
    parentPort.postMessage({ id, rows: prepared.size });
    return;
  }
  try {
    let statement = prepared.get(sql);
    if (!statement) {
      if (prepared.size >= 200) prepared.delete(prepared.keys().next().value);
      prepared.set(sql, (statement = db.prepare(sql)));
    }
    statement.raw(raw);
    parentPort.postMessage({ id, rows: statement.all(...params) });
  } catch (e) {
    parentPort.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
  }
});
