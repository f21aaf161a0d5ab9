// runtime/tables/answer-json.ts, on SQLite (PostgreSQL renders no answers: runtime/storage/dialect.ts): for every
// resource of the spec whose answer the database renders, the JSON text it renders from a row holds exactly what
// JSON.stringify(toResource(record)) holds, member for member and in the same order, for values of each kind
// (text that JSON must escape, JSON columns holding values, null or JSON null, nested objects with input-only
// and unset members, booleans, int64, NULL columns).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Store } from '../runtime/storage/store.js';
import { Table } from '../runtime/tables/table.js';
import { answerJsonSql } from '../runtime/tables/answer-json.js';
import { quoteIdentifier } from '../runtime/storage/dialect.js';
import { resourceProperties, toResource } from '../runtime/model/records.js';
import type { ApiModel } from '../runtime/model/api-model.js';
import { answerStore, chooser, seededRow } from './support/seeded-rows.js';

let store: Store;
let model: ApiModel;
let close: () => Promise<void>;

test.before(async () => {
  ({ store, model, close } = await answerStore());
});

test.after(() => close());

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
      const values = seededRow(r, selection.columns, pick);
      const [[text]] = await store.read.values(statement, values);
      if (text === null) {
        // Left to JavaScript: only a row where a JSON column SQL cannot render (a repo's customOverlay) is set.
        const set = selection.columns.filter(
          ([, c], i) => c.kind === 'json' && values[i] !== null && values[i] !== 'null',
        );
        assert.ok(set.length > 0, `${r.type}, seed ${seed}: not rendered, though no JSON column is set`);
        continue;
      }
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
