// runtime/tables/answer-shape.ts: for every resource of the spec, the compiled shape of a row's values is exactly what
// toResource makes of the record the table reads from the same values (test/support/seeded-rows.ts: JSON columns
// holding values, null, or JSON null; booleans; int64; nested objects with input-only fields; unset columns).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Store } from '../runtime/storage/store.js';
import { Table } from '../runtime/tables/table.js';
import { compileAnswerShape } from '../runtime/tables/answer-shape.js';
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

test('every resource: the compiled shape equals toResource of the table record, for values of each kind', () => {
  let cases = 0;
  for (const r of Object.values(model.resources)) {
    const table = new Table(store, r.type);
    const selection = table.selection(resourceProperties(r));
    const shape = compileAnswerShape(r, selection.columns);
    for (let seed = 1; seed <= 40; seed++) {
      const pick = chooser(seed);
      const values = seededRow(r, selection.columns, pick);
      const want = toResource(table.recordOf(values, selection), r);
      assert.equal(shape(values), want, `${r.type}, seed ${seed}`);
      assert.equal(Object.keys(shape(values)), Object.keys(want), `${r.type}, seed ${seed}: key order`);
      cases++;
    }
  }
  assert.ok(cases > 200, `${cases} cases`);
});

test.run();
