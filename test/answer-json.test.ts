// runtime/tables/answer-json.ts, on SQLite (PostgreSQL renders no answers: runtime/storage/dialect.ts): for every
// resource of the spec whose answer the database renders, the JSON text it renders from a row holds exactly what
// JSON.stringify(toResource(record)) holds, member for member and in the same order, for values of each kind
// (text that JSON must escape, JSON columns holding values, null or JSON null, nested objects with input-only
// and unset members, booleans, int64, NULL columns).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Store } from '../runtime/storage/store.js';
import { Table } from '../runtime/tables/table.js';
import { answerJsonSql, storedAsShown } from '../runtime/tables/answer-json.js';
import { storeObjectsAsShown } from '../runtime/tables/stored-objects.js';
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
const storedSyncConfig = async (uid: string) =>
  (await store.read.values('select sync_config from repos where uid = ?', [uid]))[0][0] as string | null;

/** The repo's answer as the database renders it under the model r. */
async function rendered(r: ApiModel['resources'][string], uid: string): Promise<string> {
  const table = new Table(store, r.type, r);
  const expression = answerJsonSql(store.dialect.json!, r, table.selection(resourceProperties(r)).columns)!;
  const [[text]] = await store.read.values(`select ${expression} from repos where uid = ?`, [uid]);
  return text as string;
}

test('an object whose members are all shown as stored is written as it is shown, with its shape mark, and read as stored is what toResource shows', async () => {
  const r = model.resources.repos;
  const table = new Table(store, r.type, r);
  const f = r.fields.sync_config;
  // Members in another order than the spec's, unset (null) members, text JSON must escape, an empty object.
  const written: Row[] = [
    { apkoOverlay: 'o', source: 's' },
    { azure: 'az', google: null, source: 'say "hi"\n', uniqueTags: true, expirationTime: time },
    { gracePeriod: false, amazon: '\u2028 漢字 \u0007' },
    {},
  ];
  const marks = new Set<string>();
  for (const [i, value] of written.entries()) {
    const uid = repoUid(i);
    await store.transaction((sql) =>
      table.insert(sql, { uid, parentUid: 'a'.repeat(40), createTime: time, updateTime: time, sync_config: value }),
    );
    const stored = (await storedSyncConfig(uid))!;
    const shown = JSON.stringify(outputObject(value, f.fields!));
    assert.ok(stored.startsWith(shown), stored);
    const mark = stored.slice(shown.length);
    assert.match(mark, /^[ \t\n\r]{24}$/);
    marks.add(mark);
    const want = JSON.stringify(toResource((await table.get(uid))!, r));
    assert.is(await rendered(r, uid), want, `answer ${i}`);
  }
  assert.is(marks.size, 1, 'one shape, one mark');
});

test('a value stored without the mark, or under another shape, is rebuilt: members the spec does not show stay hidden, in the spec order', async () => {
  const r = model.resources.repos;
  const f = r.fields.sync_config;
  // The same object with a member this spec does not have: its mark differs from this spec's.
  const older = {
    ...r,
    fields: { ...r.fields, sync_config: { ...f, fields: { retired: { type: 'string' }, ...f.fields } } },
  } as typeof r;
  const hand = [
    '{"apkoOverlay":"o","source":"s"}',
    '{"source":"s","google":null,"azure":"a"}',
    '{"retired":"x","source":"s"}',
    'null',
  ];
  await store.transaction(async (sql) => {
    for (const [i, text] of hand.entries())
      await sql.run(
        'insert into repos (uid, parent_uid, create_time, update_time, sync_config) values (?, ?, ?, ?, ?)',
        [repoUid(10 + i), 'a'.repeat(40), time, time, text],
      );
    await new Table(store, r.type, older).insert(sql, {
      uid: repoUid(20),
      parentUid: 'a'.repeat(40),
      createTime: time,
      updateTime: time,
      sync_config: { retired: 'x', apkoOverlay: 'o', source: 's' },
    });
  });
  assert.match(
    (await storedSyncConfig(repoUid(20)))!,
    /^\{"retired":"x","source":"s","apkoOverlay":"o"\}[ \t\n\r]{24}$/,
  );
  const want = [{ source: 's', apkoOverlay: 'o' }, { source: 's', azure: 'a' }, { source: 's' }, undefined];
  for (const [i, expected] of want.entries()) {
    const text = await rendered(r, repoUid(10 + i));
    assert.equal(JSON.parse(text).sync_config, expected, text);
    if (expected) assert.ok(text.includes(`"sync_config":${JSON.stringify(expected)},`), text);
  }
  const text = await rendered(r, repoUid(20));
  assert.ok(text.includes('"sync_config":{"source":"s","apkoOverlay":"o"},'), text);
  // Under the shape it was written with, it is read as stored.
  assert.ok(
    (await rendered(older, repoUid(20))).includes('"sync_config":{"retired":"x","source":"s","apkoOverlay":"o"},'),
  );
});

test('a member the spec does not have is kept when the object is written, and stays hidden; so is a value JSON writes as null', async () => {
  const r = model.resources.repos;
  const table = new Table(store, r.type, r);
  await store.transaction((sql) =>
    table.insert(sql, {
      uid: repoUid(30),
      parentUid: 'a'.repeat(40),
      createTime: time,
      updateTime: time,
      sync_config: { retired: 'kept', source: 's' },
    }),
  );
  assert.is(await storedSyncConfig(repoUid(30)), '{"retired":"kept","source":"s"}');
  assert.equal(JSON.parse(await rendered(r, repoUid(30))).sync_config, { source: 's' });
  // A value JSON would write as null (a handler's NaN, an invalid Date) is stored without the mark, and left out.
  await store.transaction((sql) =>
    table.insert(sql, {
      uid: repoUid(31),
      parentUid: 'a'.repeat(40),
      createTime: time,
      updateTime: time,
      sync_config: { source: 's', uniqueTags: NaN, expirationTime: new Date('nope') },
    }),
  );
  assert.is(await storedSyncConfig(repoUid(31)), '{"source":"s","uniqueTags":null,"expirationTime":null}');
  assert.equal(JSON.parse(await rendered(r, repoUid(31))).sync_config, { source: 's' });
});

test('the pass at start writes objects stored otherwise as a write now would, answers unchanged, once per shape', async () => {
  const r = model.resources.repos;
  const f = r.fields.sync_config;
  // Rows an older version wrote (members in another order, a null member), beside those the tests above left.
  await store.transaction(async (sql) => {
    for (const [i, text] of ['{"apkoOverlay":"o","source":"s"}', '{"source":"s","google":null,"azure":"a"}'].entries())
      await sql.run(
        'insert into repos (uid, parent_uid, create_time, update_time, sync_config) values (?, ?, ?, ?, ?)',
        [repoUid(40 + i), 'a'.repeat(40), time, time, text],
      );
    // Far past the others: the pass reaches it without a window per rowid between.
    await sql.run(
      'insert into repos (rowid, uid, parent_uid, create_time, update_time, sync_config) values (?, ?, ?, ?, ?, ?)',
      [1e12, repoUid(42), 'a'.repeat(40), time, time, '{"apkoOverlay":"o","source":"s"}'],
    );
  });
  const rows = async () =>
    (await store.read.values('select uid, sync_config from repos where sync_config is not null order by uid')) as [
      string,
      string,
    ][];
  const before = await rows();
  const answers = await Promise.all(before.map(([uid]) => rendered(r, uid)));
  const tables = Object.values(model.resources).map((m) => new Table(store, m.type, m));
  // Stopped before it starts: nothing written, nothing recorded.
  assert.is(await storeObjectsAsShown(store, tables, AbortSignal.abort()), 0);
  assert.equal(await rows(), before);
  const rewritten = await storeObjectsAsShown(store, tables, new AbortController().signal);
  const after = await rows();
  let changed = 0;
  for (const [i, [uid, stored]] of before.entries()) {
    const want = storedAsShown(f, JSON.parse(stored)) ?? stored;
    if (want !== stored) changed++;
    assert.equal(after[i], [uid, want], uid);
    assert.is(await rendered(r, uid), answers[i], uid);
  }
  assert.is(rewritten, changed);
  assert.ok(changed >= 3, `${changed} rewritten`);
  assert.match(after.find(([uid]) => uid === repoUid(41))![1], /^\{"source":"s","azure":"a"\}[ \t\n\r]{24}$/);
  assert.match(after.find(([uid]) => uid === repoUid(42))![1], /^\{"source":"s","apkoOverlay":"o"\}[ \t\n\r]{24}$/);
  // A member this spec does not have keeps its row as it was.
  assert.ok(after.some(([, stored]) => stored === '{"retired":"kept","source":"s"}'));
  // Recorded: the next start skips the scan, and a row written unmarked since is read as such rows always are.
  await store.transaction((sql) =>
    sql.run('update repos set sync_config = ? where uid = ?', ['{"apkoOverlay":"o","source":"s"}', repoUid(40)]),
  );
  assert.is(await storeObjectsAsShown(store, tables, new AbortController().signal), 0);
  assert.is(await storedSyncConfig(repoUid(40)), '{"apkoOverlay":"o","source":"s"}');
  assert.is(await rendered(r, repoUid(40)), answers[before.findIndex(([uid]) => uid === repoUid(40))]);
  // Under another shape (a spec that changed the object) the column is scanned again.
  await store.transaction((sql) => sql.run("update marked_columns set mark = 'other' where name = 'Repo.sync_config'"));
  assert.is(await storeObjectsAsShown(store, tables, new AbortController().signal), 1);
  assert.is(await storedSyncConfig(repoUid(40)), after.find(([uid]) => uid === repoUid(40))![1]);
});

test.run();
