// Rows of seeded values for a resource's answer columns, as a table could hold them, for the tests of how an
// answer is made from a row (test/answer-shape.test.ts, test/answer-json.test.ts); and the SQLite store they use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGenerated } from '../../server/server.js';
import { openStore } from '../../runtime/storage/open-store.js';
import type { Store } from '../../runtime/storage/store.js';
import type { Column } from '../../runtime/storage/dialect.js';
import type { ApiModel, FieldModel, ResourceModel } from '../../runtime/model/api-model.js';

/** A store on a SQLite file of its own, with the spec's model; close removes the file. */
export async function answerStore(): Promise<{ store: Store; model: ApiModel; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'answer-rows-'));
  const parts = await loadGenerated();
  const store = await openStore({ engine: 'sqlite', file: join(dir, 'db.sqlite') }, parts.entities);
  return {
    store,
    model: parts.model,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A deterministic sequence of choices, so a failure names a case that can be run again. */
export function chooser(seed: number): (n: number) => number {
  let s = seed;
  // In 32-bit integer arithmetic, and from the high bits: a product past 2^53 loses its low bits, and an LCG's
  // low bits repeat with a short period.
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 16) % n;
  };
}

/** Text JSON writes as it is, and text it must escape. */
const texts = [
  'plain',
  'say "hi"',
  'back\\slash',
  'line\nbreak\ttab',
  'bell\u0007',
  'é ü 漢字',
  '😀',
  '\u2028',
  "it's",
  '',
];

/** A value a field may hold inside a JSON column: nested objects keep every field, input-only ones too. */
function jsonValue(f: FieldModel, pick: (n: number) => number, element = false): unknown {
  if (f.repeated && !element) return [jsonValue(f, pick, true), pick(4) === 0 ? null : jsonValue(f, pick, true)];
  if (f.type === 'object')
    return Object.fromEntries(
      Object.entries(f.fields ?? {}).flatMap(([k, sub]) =>
        pick(3) === 0 ? [] : [[k, pick(6) === 0 ? null : jsonValue(sub, pick)]],
      ),
    );
  if (f.type === 'map') return { a: jsonValue(f.mapValue!, pick), b: null };
  if (f.type === 'int64') return pick(2) === 0 ? 4096 : '12';
  if (f.type === 'bool') return pick(2) === 0;
  if (f.type === 'int32' || f.type === 'double') return pick(100) - 50;
  return texts[pick(texts.length)];
}

/**
 * One row's values for these columns of r, in their order: NULLs, JSON columns holding values, null or JSON
 * null, booleans as 1 and 0, int64 past 2^53 as text, and text JSON must escape. The uid is never NULL.
 */
export function seededRow(
  r: ResourceModel,
  columns: readonly (readonly [string, Column])[],
  pick: (n: number) => number,
): unknown[] {
  return columns.map(([prop, c]) => {
    if (prop !== 'uid' && pick(4) === 0) return null;
    const f = r.fields[prop];
    if (c.kind === 'json') return pick(8) === 0 ? 'null' : JSON.stringify(f ? jsonValue(f, pick) : { x: 1 });
    if (c.kind === 'boolean') return pick(2);
    if (c.kind === 'int64') return String(pick(1_000_000) * 1_000_000_007);
    if (f?.type === 'int32') return pick(100) - 50;
    return prop === 'uid' || prop.endsWith('Time') ? `${prop}-${pick(1000)}` : texts[pick(texts.length)];
  });
}
