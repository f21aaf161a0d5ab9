// runtime/answer-json.ts, on SQLite (PostgreSQL renders no answers: runtime/dialect.ts): for every resource of
// the spec whose answer the database renders, the JSON text it renders from a row holds exactly what
// JSON.stringify(toResource(record)) holds, member for member and in the same order, for values of each kind
// (text that JSON must escape, JSON columns holding values, null or JSON null, nested objects with input-only
// and unset members, booleans, int64, NULL columns).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadGenerated } from '../server/server.js';
import { openStore, type Store } from '../runtime/store.js';
import { Table } from '../runtime/table.js';
import { answerJsonSql } from '../runtime/answer-json.js';
import { quoteIdentifier } from '../runtime/dialect.js';
import { resourceProperties, toResource } from '../runtime/records.js';
import type { ApiModel, FieldModel } from '../runtime/model.js';

let store: Store;
let model: ApiModel;
let dir: string;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'answer-json-'));
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

test('every resource the database renders: its JSON text holds what toResource of the table record holds, in order', async () => {
  let cases = 0;
  const rendered: string[] = [];
  for (const r of Object.values(model.resources)) {
    const table = new Table(store, r.type);
    const selection = table.selection(resourceProperties(r));
    const expression = answerJsonSql(store.dialect.json!, r, selection.columns);
    if (!expression) continue;
    rendered.push(r.type);
    // The row as a subquery of parameters named as the table's columns: no constraint of the table applies.
    const row = selection.columns.map(([, c]) => `? as ${quoteIdentifier(c.name)}`).join(', ');
    const statement = `select ${expression} as answer from (select ${row}) as r`;
    for (let seed = 1; seed <= 60; seed++) {
      const pick = chooser(seed);
      const values = selection.columns.map(([prop, c]) => {
        if (prop !== 'uid' && pick(4) === 0) return null;
        const f = r.fields[prop];
        if (c.kind === 'json') return pick(8) === 0 ? 'null' : JSON.stringify(f ? jsonValue(f, pick) : { x: 1 });
        if (c.kind === 'boolean') return pick(2);
        if (c.kind === 'int64') return String(pick(1_000_000) * 1_000_000_007);
        if (f?.type === 'int32') return pick(100) - 50;
        return prop === 'uid' || prop.endsWith('Time') ? `${prop}-${pick(1000)}` : texts[pick(texts.length)];
      });
      const [[text]] = await store.read.values(statement, values);
      const want = JSON.stringify(toResource(table.recordOf(values, selection), r));
      assert.is(JSON.stringify(JSON.parse(text as string)), want, `${r.type}, seed ${seed}`);
      cases++;
    }
  }
  // The resources lists and gets are measured on, and most others, are rendered by SQLite.
  for (const type of ['Repo', 'Tag', 'Role', 'RoleBinding']) assert.ok(rendered.includes(type), type);
  assert.ok(cases > 600, `${cases} cases`);
});

test('a JSON column holds JSON text whatever value was written to it, so an answer shown as stored stays JSON', async () => {
  const r = model.resources.repos;
  const table = new Table(store, r.type);
  const selection = table.selection(resourceProperties(r));
  const expression = answerJsonSql(store.dialect.json!, r, selection.columns)!;
  const uid = `${'a'.repeat(40)}/${'b'.repeat(16)}`;
  const time = '2026-11-23T00:00:00.000Z';
  // Past validation, a list field given text that would close the list and add a member of its own.
  const forged = '["x"],"uid":"forged"';
  await store.transaction((sql) =>
    table.insert(sql, { uid, parentUid: 'a'.repeat(40), createTime: time, updateTime: time, aliases: forged }),
  );
  const [[text]] = await store.read.values(`select ${expression} from repos where uid = ?`, [uid]);
  assert.equal(JSON.parse(text as string), { uid, aliases: forged, createTime: time, updateTime: time });
});

test.run();
