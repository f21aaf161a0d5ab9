// runtime/answer-shape.ts: for every resource of the spec, the compiled shape of a row's values is exactly what
// toResource makes of the record the table reads from the same values (JSON columns holding values, null, or
// JSON null; booleans; int64; nested objects with input-only fields; unset columns).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadGenerated } from '../server/server.js';
import { openStore, type Store } from '../runtime/store.js';
import { Table } from '../runtime/table.js';
import { compileAnswerShape } from '../runtime/answer-shape.js';
import { resourceProperties, toResource } from '../runtime/records.js';
import type { ApiModel, FieldModel } from '../runtime/model.js';

let store: Store;
let model: ApiModel;
let dir: string;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'answer-shape-'));
  const parts = await loadGenerated();
  model = parts.model;
  store = await openStore({ engine: 'sqlite', file: join(dir, 'db.sqlite') }, parts.entities);
});

test.after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A deterministic sequence of choices, so a failure names a case that can be run again. */
function chooser(seed: number) {
  let s = seed;
  // In 32-bit integer arithmetic, and from the high bits: a product past 2^53 loses its low bits, and an LCG's
  // low bits repeat with a short period.
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 16) % n;
  };
}

/** A value a field may hold inside a JSON column: nested objects keep every field, input-only ones too. */
function jsonValue(f: FieldModel, pick: (n: number) => number, element = false): unknown {
  if (f.repeated && !element) return [jsonValue(f, pick, true), pick(4) === 0 ? null : jsonValue(f, pick, true)];
  if (f.type === 'object')
    return Object.fromEntries(
      Object.entries(f.fields ?? {}).flatMap(([k, sub]) => (pick(3) === 0 ? [] : [[k, jsonValue(sub, pick)]])),
    );
  if (f.type === 'map') return { a: jsonValue(f.mapValue!, pick), b: null };
  if (f.type === 'int64') return pick(2) === 0 ? 4096 : '12';
  if (f.type === 'bool') return pick(2) === 0;
  if (f.type === 'int32' || f.type === 'double') return pick(100);
  return `s${pick(1000)}`;
}

test('every resource: the compiled shape equals toResource of the table record, for values of each kind', () => {
  let cases = 0;
  for (const r of Object.values(model.resources)) {
    const table = new Table(store, r.type);
    const selection = table.selection(resourceProperties(r));
    const shape = compileAnswerShape(r, selection.columns);
    for (let seed = 1; seed <= 40; seed++) {
      const pick = chooser(seed);
      const values = selection.columns.map(([prop, c]) => {
        if (pick(4) === 0) return null;
        const f = r.fields[prop];
        if (c.kind === 'json') return pick(8) === 0 ? 'null' : JSON.stringify(f ? jsonValue(f, pick) : { x: 1 });
        if (c.kind === 'boolean') return pick(2);
        if (c.kind === 'int64') return String(pick(1_000_000));
        return f?.type === 'int32' ? pick(100) : `${prop}-${pick(1000)}`;
      });
      const want = toResource(table.recordOf(values, selection), r);
      assert.equal(shape(values), want, `${r.type}, seed ${seed}`);
      assert.equal(Object.keys(shape(values)), Object.keys(want), `${r.type}, seed ${seed}: key order`);
      cases++;
    }
  }
  assert.ok(cases > 200, `${cases} cases`);
});

test.run();
