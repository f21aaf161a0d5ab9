// Objects written before they were stored as shown (by an older version, a data migration, a server of another
// spec) are rebuilt from their members at every read, a tenth of a get's CPU (runtime/tables/answer-json.ts).
// After a start on SQLite this pass writes each such object again as a write now would, a batch of rows per write
// transaction among the requests' own, and records per column the mark it brought every row to, so that later
// starts skip the scan (runtime/storage/marked-columns.ts). Reads never rely on the record: each row has its mark.
import { markedWith, recordMarked } from '../storage/marked-columns.js';
import type { Store } from '../storage/store.js';
import type { Table } from './table.js';

/** Rows per transaction (by rowid): a millisecond or two of the write connection, between the requests' writes. */
const window = 1000;

/** Resolves to how many rows it wrote again, once every column is done or `signal` stopped it. */
export async function storeObjectsAsShown(store: Store, tables: Table[], signal: AbortSignal): Promise<number> {
  let rewritten = 0;
  for (const table of tables) {
    for (const { name, prop, mark } of table.shownObjects()) {
      if ((await markedWith(store.read, name)) === mark) continue;
      // Rows added after this are written by this version, as shown.
      const last = await table.lastRowid(store.read);
      // Each window starts at a row: rowids far apart cost no empty windows.
      let from = await table.rowidAfter(store.read, Number.MIN_SAFE_INTEGER);
      while (from !== undefined && from <= last) {
        if (signal.aborted) return rewritten;
        const after = from - 1;
        rewritten += await store.transaction((sql) => table.storeAsShown(sql, prop, mark, after, after + window));
        from = await table.rowidAfter(store.read, after + window);
      }
      await store.transaction((sql) => recordMarked(sql, name, mark));
    }
  }
  return rewritten;
}

/** The pass, in the background from now: its outcome logged; stop() ends it after the batch under way. */
export function startStoringObjectsAsShown(
  store: Store,
  tables: Table[],
  log: (line: Record<string, unknown>) => void,
): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const line = { level: 'info', worker: 'stored-objects' };
  const done = storeObjectsAsShown(store, tables, stopping.signal).then(
    (rows) => rows > 0 && log({ ...line, message: `the objects of ${rows} rows written again as shown` }),
    // Tried again at the next start; meanwhile such rows are read as they always were.
    (e) => log({ ...line, level: 'error', error: e instanceof Error ? e.message : String(e) }),
  );
  return {
    stop: async () => {
      stopping.abort();
      await done;
    },
  };
}
