// runtime/tables/answer-json.ts, on SQLite (PostgreSQL renders no answers: runtime/storage/dialect.ts): for every
// resource of the spec whose answer the database renders, the JSON text it renders from a row holds exactly what
// JSON.stringify(toResource(record)) holds, member for member and in the same order, for values of each kind
// (text that JSON must escape, JSON columns holding values, null or JSON null, nested objects with input-only
// and unset members, booleans, int64, NULL columns).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Store } from '../runtime/storage/store.js';
import { Table } from '../runtime/tables/table.js';
import { answerJsonSql, showsAsStored } from '../runtime/tables/answer-json.js';
import { findObjectsAsShown } from '../runtime/tables/objects-as-shown.js';
import { quoteIdentifier } from '../runtime/storage/dialect.js';
import { outputObject, resourceProperties, toResource, type Row } from '../runtime/model/records.js';
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

const repoUid = (n: number) => `${'a'.repeat(40)}/${n.toString(16).padStart(16, '0')}`;
const time = '2026-11-27T00:00:00.000Z';

/** The repos' sync_config as stored, by uid. */
async function storedSyncConfigs(): Promise<Map<string, unknown>> {
  const rows = await store.read.all('select uid, sync_config as s from repos where sync_config is not null');
  return new Map(rows.map((row) => [row.uid as string, row.s]));
}

test('an object whose members are all shown as stored is written as it is shown, and rendered as stored holds what toResource holds', async () => {
  const r = model.resources.repos;
  const table = new Table(store, r.type, r);
  const f = r.fields.sync_config;
  assert.ok(showsAsStored(f));
  const selection = table.selection(resourceProperties(r));
  const rebuilt = answerJsonSql(store.dialect.json!, r, selection.columns)!;
  const asStored = answerJsonSql(store.dialect.json!, r, selection.columns, new Set(['sync_config']))!;
  assert.ok(asStored.length < rebuilt.length - 200, 'the stored object is taken as it is');
  // Members in another order than the spec's, unset (null) members, and text JSON must escape.
  const written: Row[] = [
    { apkoOverlay: 'o', source: 's' },
    { azure: 'az', google: null, source: 'say "hi"\n', uniqueTags: true, expirationTime: time },
    { gracePeriod: false, amazon: '\u2028 漢字' },
    {},
  ];
  for (const [i, value] of written.entries())
    await store.transaction((sql) =>
      table.insert(sql, {
        uid: repoUid(i),
        parentUid: 'a'.repeat(40),
        createTime: time,
        updateTime: time,
        sync_config: value,
      }),
    );
  const stored = await storedSyncConfigs();
  for (const [i, value] of written.entries()) {
    const uid = repoUid(i);
    assert.is(stored.get(uid), JSON.stringify(outputObject(value, f.fields!)), `stored ${i}`);
    const record = (await table.get(uid))!;
    const want = JSON.stringify(toResource(record, r));
    for (const expression of [asStored, rebuilt]) {
      const [[text]] = await store.read.values(`select ${expression} from repos where uid = ?`, [uid]);
      assert.is(text, want, `answer ${i}`);
    }
  }
});

test('at start, rows stored in another form are brought to the shown one and recorded; a row with a member the spec lacks keeps it, and its column stays rebuilt', async () => {
  const r = model.resources.repos;
  // Written as an older version wrote them: the spec's members in another order, a JSON null member.
  const old: [number, string][] = [
    [10, '{"apkoOverlay":"o","source":"s"}'],
    [11, '{"source":"s","google":null,"azure":"a"}'],
    [12, 'null'],
  ];
  await store.transaction(async (sql) => {
    for (const [n, text] of old)
      await sql.run(
        'insert into repos (uid, parent_uid, create_time, update_time, sync_config) values (?, ?, ?, ?, ?)',
        [repoUid(n), 'a'.repeat(40), time, time, text],
      );
  });
  const table = new Table(store, r.type, r);
  await findObjectsAsShown(store, [table]);
  assert.ok(table.storedAsShown.has('sync_config'));
  const stored = await storedSyncConfigs();
  assert.is(stored.get(repoUid(10)), '{"source":"s","apkoOverlay":"o"}');
  assert.is(stored.get(repoUid(11)), '{"source":"s","azure":"a"}');
  const [record] = await store.read.all('select shape, as_shown as a from stored_shapes where name = ?', [
    '"repos"."sync_config"',
  ]);
  assert.is(record.a, 1);

  // A member the spec no longer has (a removed sub-field), in a row written by hand: not dropped, not shown.
  await store.transaction((sql) =>
    sql.run('insert into repos (uid, parent_uid, create_time, update_time, sync_config) values (?, ?, ?, ?, ?)', [
      repoUid(13),
      'a'.repeat(40),
      time,
      time,
      '{"retired":"kept","source":"s"}',
    ]),
  );
  // The recorded shape is trusted at the next start; a changed spec's (here: the record's changed) is checked again.
  await store.transaction((sql) => sql.run('update stored_shapes set shape = ?', ['an older shape']));
  const again = new Table(store, r.type, r);
  await findObjectsAsShown(store, [again]);
  assert.not.ok(again.storedAsShown.has('sync_config'));
  assert.is((await storedSyncConfigs()).get(repoUid(13)), '{"retired":"kept","source":"s"}');
  const selection = again.selection(resourceProperties(r));
  const expression = answerJsonSql(store.dialect.json!, r, selection.columns, again.storedAsShown)!;
  const [[text]] = await store.read.values(`select ${expression} from repos where uid = ?`, [repoUid(13)]);
  assert.equal(JSON.parse(text as string).sync_config, { source: 's' });
});

test('a column the spec stops keeping as shown (a member made input-only) is checked again when it is kept so again: its stored secret is never shown', async () => {
  const r = model.resources.repos;
  const f = r.fields.sync_config;
  // The rows of the tests before gone, and what was recorded of them.
  await store.transaction(async (sql) => {
    await sql.run("delete from repos where uid like 'aaaa%'");
    await sql.run('delete from stored_shapes');
  });
  const kept = new Table(store, r.type, r);
  await findObjectsAsShown(store, [kept]);
  assert.ok(kept.storedAsShown.has('sync_config'));
  // A spec whose sync_config has an input-only member: stored with the object, never shown.
  const withSecret = {
    ...r,
    fields: { ...r.fields, sync_config: { ...f, fields: { ...f.fields, token: { type: 'string', inputOnly: true } } } },
  } as typeof r;
  const secretTable = new Table(store, r.type, withSecret);
  await findObjectsAsShown(store, [secretTable]);
  assert.not.ok(secretTable.storedAsShown.has('sync_config'));
  await store.transaction((sql) =>
    secretTable.insert(sql, {
      uid: repoUid(20),
      parentUid: 'a'.repeat(40),
      createTime: time,
      updateTime: time,
      sync_config: { token: 'secret', source: 's' },
    }),
  );
  assert.match(String((await storedSyncConfigs()).get(repoUid(20))), /secret/);
  // The member made output again is gone from the spec; the column is kept as shown again, and checked.
  const again = new Table(store, r.type, r);
  await findObjectsAsShown(store, [again]);
  assert.not.ok(again.storedAsShown.has('sync_config'));
  const expression = answerJsonSql(
    store.dialect.json!,
    r,
    again.selection(resourceProperties(r)).columns,
    again.storedAsShown,
  )!;
  const [[text]] = await store.read.values(`select ${expression} from repos where uid = ?`, [repoUid(20)]);
  assert.not.match(String(text), /secret/);
  assert.equal(JSON.parse(text as string).sync_config, { source: 's' });
});

test.run();
