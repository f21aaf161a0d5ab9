// The SQL read path answers exactly what the ORM answers, on a real SQLite file, for every kind of condition the
// runtime writes (runtime/tables/condition.ts), checked against the same condition in the ORM's own filter syntax.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadGenerated } from '../server/server.js';
import { openStore } from '../runtime/storage/open-store.js';
import type { Store } from '../runtime/storage/store.js';
import {
  and,
  contains,
  equal,
  everything,
  isNull,
  notNull,
  oneOf,
  or,
  range,
  type Condition,
} from '../runtime/tables/condition.js';
import { UnsupportedCondition } from '../runtime/tables/sql-condition.js';
import { Table } from '../runtime/tables/table.js';
import { CountCache } from '../runtime/storage/count-cache.js';
import { descendantRange, newChildUid, newRootUid } from '../runtime/model/uid.js';

let store: Store;
let dir: string;
const org = newRootUid();
const repo = newChildUid(org);

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'table-table-'));
  store = await openStore({ engine: 'sqlite', file: join(dir, 'db.sqlite') }, (await loadGenerated()).entities);
  const em = store.orm.em.fork();
  const time = (i: number) => new Date(Date.UTC(2026, 0, 1 + i)).toISOString();
  for (let i = 0; i < 30; i++) {
    em.persist(
      em.create('Tag', {
        uid: newChildUid(repo),
        parentUid: repo,
        createTime: time(i),
        updateTime: time(30 - i),
        name: `t${i}`,
        digest: `sha256:${String(i % 3).repeat(64)}`,
        deprecated: i % 4 === 0 ? true : i % 4 === 1 ? false : null,
        bundles: i % 2 ? ['a', `b${i}`] : null,
        mainPackageName: i % 5 ? `pkg${i % 5}` : null,
      }),
    );
    em.persist(
      em.create('VulnReport', {
        uid: newChildUid(repo),
        parentUid: repo,
        createTime: time(i),
        updateTime: time(i),
        digest: `sha256:${'a'.repeat(64)}`,
        scanner: { name: i % 2 ? 'GRYPE' : 'TRIVY', version: `0.${i % 3}` },
        vulnerabilities: [],
        sizeBytes: String(i - 5),
      }),
    );
  }
  await em.flush();
});
test.after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** [entity, what, our condition, the same condition in the ORM's filter syntax] */
const filters: [string, string, Condition, Record<string, unknown>][] = [
  ['Tag', 'everything', everything(), {}],
  [
    'Tag',
    'a descendant range and equality',
    and(range('uid', descendantRange(org)), equal('parentUid', repo), equal('name', 't3')),
    { $and: [{ uid: { $gt: `${org}/`, $lt: `${org}0` } }, { parentUid: repo }, { name: 't3' }] },
  ],
  [
    'Tag',
    'in, and an empty in',
    or(oneOf('name', ['t1', 't2', 't29']), oneOf('name', [])),
    { $or: [{ name: { $in: ['t1', 't2', 't29'] } }, { name: { $in: [] } }] },
  ],
  [
    'Tag',
    'booleans and null',
    or(equal('deprecated', true), equal('deprecated', null)),
    { $or: [{ deprecated: true }, { deprecated: null }] },
  ],
  ['Tag', 'false', equal('deprecated', false), { deprecated: false }],
  ['Tag', 'not null', notNull('mainPackageName'), { mainPackageName: { $ne: null } }],
  [
    'Tag',
    'ranges on time',
    and(
      range('createTime', { gte: '2026-01-05T00:00:00.000Z' }),
      range('createTime', { lt: '2026-01-09T00:00:00.000Z' }),
    ),
    {
      $and: [{ createTime: { $gte: '2026-01-05T00:00:00.000Z' } }, { createTime: { $lt: '2026-01-09T00:00:00.000Z' } }],
    },
  ],
  ['Tag', 'contains', contains('name', '2'), { name: { $like: '%2%' } }],
  ['Tag', 'contains: _ and % match themselves', contains('name', 't_'), { name: { $like: 'no such name' } }],
  [
    'Tag',
    'a cursor with a null key',
    or(notNull('mainPackageName'), and(isNull('mainPackageName'), range('uid', { gt: repo }))),
    { $or: [{ mainPackageName: { $ne: null } }, { mainPackageName: null, uid: { $gt: repo } }] },
  ],
  ['Tag', 'no match', equal('name', 'nope'), { name: 'nope' }],
  [
    'Tag',
    'a scope range and a cursor on the same index, merged',
    and(
      range('uid', descendantRange(org)),
      range('uid', { gt: `${repo}/8` }),
      range('uid', { gte: `${repo}/4`, lte: `${repo}/c` }),
    ),
    {
      $and: [
        { uid: { $gt: `${org}/`, $lt: `${org}0` } },
        { uid: { $gt: `${repo}/8` } },
        { uid: { $gte: `${repo}/4`, $lte: `${repo}/c` } },
      ],
    },
  ],
  [
    'Tag',
    'ranges on different properties stay apart',
    and(
      range('createTime', { gt: '2026-01-03' }),
      range('name', { lt: 't5' }),
      range('createTime', { lte: '2026-01-20' }),
    ),
    { $and: [{ createTime: { $gt: '2026-01-03' } }, { name: { $lt: 't5' } }, { createTime: { $lte: '2026-01-20' } }] },
  ],
  [
    'VulnReport',
    'int64 ranges on one property, merged as numbers',
    and(range('sizeBytes', { gte: '9' }), range('sizeBytes', { gte: '10', lt: '20' })),
    { $and: [{ sizeBytes: { $gte: '9' } }, { sizeBytes: { $gte: '10', $lt: '20' } }] },
  ],
  [
    'VulnReport',
    'int64 ranges merged, the tighter bound numerically',
    and(
      range('sizeBytes', { gt: '-3' }),
      range('sizeBytes', { gte: '-10' }),
      range('sizeBytes', { lt: '9' }),
      range('sizeBytes', { lt: '10' }),
    ),
    {
      $and: [
        { sizeBytes: { $gt: '-3' } },
        { sizeBytes: { $gte: '-10' } },
        { sizeBytes: { $lt: '9' } },
        { sizeBytes: { $lt: '10' } },
      ],
    },
  ],
  ['VulnReport', 'a JSON property', equal('scanner.name', 'GRYPE'), { scanner: { name: 'GRYPE' } }],
  [
    'VulnReport',
    'two JSON properties',
    and(equal('scanner.name', 'TRIVY'), equal('scanner.version', '0.1')),
    { $and: [{ scanner: { name: 'TRIVY', version: '0.1' } }] },
  ],
];

for (const [entity, what, where, orm] of filters) {
  test(`${entity}: ${what}: same rows, in the same order, as the ORM`, async () => {
    const table = new Table(store, entity);
    for (const order of [
      [{ property: 'uid', desc: false }],
      [
        { property: 'createTime', desc: true },
        { property: 'uid', desc: true },
      ],
    ]) {
      const ours = await table.find(where, order, 50);
      const theirs = await store.orm.em.fork().find(entity, orm, {
        orderBy: Object.fromEntries(order.map((o) => [o.property, o.desc ? 'desc' : 'asc'])),
        limit: 50,
      });
      assert.equal(
        ours.map((r) => ({ ...r })),
        JSON.parse(JSON.stringify(theirs)),
        JSON.stringify(order),
      );
    }
    assert.is(await table.count(where), await store.orm.em.fork().count(entity, orm));
  });
}

test('limit and offset page the same way', async () => {
  const table = new Table(store, 'Tag');
  const order = [
    { property: 'name', desc: false },
    { property: 'uid', desc: false },
  ];
  const page = await table.find(everything(), order, 5, 10);
  assert.equal(
    page.map((r) => r.name),
    ['t18', 't19', 't2', 't20', 't21'],
  );
});

test('a property the table does not have is refused, never run', async () => {
  const table = new Table(store, 'Tag');
  for (const where of [equal('nmae', 't1'), equal('name.inner', 't1'), and(equal('name', 't1'), isNull('nope'))]) {
    try {
      await table.find(where, [{ property: 'name', desc: false }], 50);
      assert.unreachable(`${JSON.stringify(where)} was run`);
    } catch (e) {
      assert.instance(e, UnsupportedCondition);
    }
  }
});

test('values are bound, never spliced: a value that looks like SQL matches only itself', async () => {
  const table = new Table(store, 'Tag');
  for (const value of ["' or 1=1 --", '" or ""="', "x'); drop table tags; --"]) {
    assert.equal(await table.find(equal('name', value), [{ property: 'name', desc: false }], 50), []);
    assert.is(await table.count(oneOf('name', [value])), 0);
  }
  assert.ok((await table.count(everything())) > 0, 'the table is still there');
});

test('writes: what Table inserts and updates, the ORM reads back the same (JSON, booleans, nulls)', async () => {
  const table = new Table(store, 'Tag');
  const uid = newChildUid(repo);
  await store.transaction((sql) =>
    table.insert(sql, {
      uid,
      parentUid: repo,
      createTime: 't0',
      updateTime: 't0',
      name: 'written',
      digest: 'd',
      deprecated: true,
      bundles: ['x', 'y'],
      mainPackageName: null,
    }),
  );
  let orm = (await store.orm.em.fork().findOne('Tag', { uid })) as Record<string, unknown>;
  assert.equal([orm.deprecated, orm.bundles, orm.mainPackageName, orm.name], [true, ['x', 'y'], null, 'written']);
  await store.transaction((sql) => table.update(sql, uid, { deprecated: false, bundles: null, updateTime: 't1' }));
  orm = (await store.orm.em.fork().findOne('Tag', { uid })) as Record<string, unknown>;
  assert.equal([orm.deprecated, orm.bundles, orm.updateTime], [false, null, 't1']);
  assert.equal(await table.get(uid), { ...JSON.parse(JSON.stringify(orm)) });
  await store.transaction((sql) => table.delete(sql, uid));
  assert.is(await table.get(uid), null);
});

test('a transaction that throws leaves nothing; the ORM waits for a transaction in progress instead of seeing into it', async () => {
  const table = new Table(store, 'Tag');
  const uid = newChildUid(repo);
  const row = { uid, parentUid: repo, createTime: 't', updateTime: 't', name: 'rolled back', digest: 'd' };
  try {
    await store.transaction(async (sql) => {
      await table.insert(sql, row);
      throw new Error('changed my mind');
    });
    assert.unreachable();
  } catch (e) {
    assert.is((e as Error).message, 'changed my mind');
  }
  assert.is(await table.get(uid), null);

  let inserted!: () => void;
  const inside = new Promise<void>((r) => {
    inserted = r;
  });
  let committed = false;
  const writing = store
    .transaction(async (sql) => {
      await table.insert(sql, row);
      inserted();
      await new Promise((r) => setTimeout(r, 50));
    })
    .then(() => {
      committed = true;
    });
  await inside;
  const counted = await store.orm.em.fork().count('Tag', { uid });
  assert.ok(committed, 'the ORM query ran after the commit');
  assert.is(counted, 1);
  await writing;
});

test('writes committed in groups: a failing write fails alone and leaves nothing; the others are all stored', async () => {
  const table = new Table(store, 'Tag');
  const uids = Array.from({ length: 20 }, () => newChildUid(repo));
  const outcomes = await Promise.allSettled(
    uids.map((uid, i) =>
      store.transaction(async (sql) => {
        await table.insert(sql, {
          uid,
          parentUid: repo,
          createTime: 't',
          updateTime: 't',
          name: `group ${i}`,
          digest: 'd',
        });
        if (i % 7 === 3) throw new Error(`write ${i} refused`);
        return i;
      }),
    ),
  );
  const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []));
  assert.equal(failed, [3, 10, 17]);
  assert.match(String((outcomes[3] as PromiseRejectedResult).reason), /write 3 refused/);
  for (const [i, uid] of uids.entries()) assert.is(!!(await table.get(uid)), !failed.includes(i), `write ${i}`);
});

test('large counts are kept until any connection commits; small ones are always counted', async () => {
  const cache = new CountCache();
  let counted = 0;
  let rows = 5000;
  const count = async () => {
    counted++;
    return rows;
  };
  assert.is(await cache.count(store.read, 'q', count), 5000);
  assert.is(await cache.count(store.read, 'q', count), 5000);
  assert.is(await cache.count(store.read, 'q', count), 5000);
  assert.is(counted, 2, 'the third count is the kept one');

  rows = 5001;
  await store.transaction((sql) =>
    new Table(store, 'Tag').insert(sql, {
      uid: newChildUid(repo),
      parentUid: repo,
      createTime: 't',
      updateTime: 't',
      name: 'bump',
      digest: 'd',
    }),
  );
  assert.is(await cache.count(store.read, 'q', count), 5001, 'a commit on the writing connection');
  rows = 5002;
  const em = store.orm.em.fork();
  em.persist(
    em.create('Tag', {
      uid: newChildUid(repo),
      parentUid: repo,
      createTime: 't',
      updateTime: 't',
      name: 'bump2',
      digest: 'd',
    }),
  );
  await em.flush();
  assert.is(await cache.count(store.read, 'q', count), 5002, 'a commit through the ORM');

  rows = 10;
  counted = 0;
  for (let i = 0; i < 3; i++) assert.is(await cache.count(store.read, 'small', count), 10);
  assert.is(counted, 3);
});

test('statements of a transaction sent without waiting run in the order sent', async () => {
  const sent = Array.from({ length: 60 }, (_, i) => i);
  await store.transaction(async (sql) => {
    await Promise.all(
      sent.map((i) =>
        i % 2
          ? sql.run('insert into event_outbox (type, subject, time, body) values (?, ?, ?, ?)', [
              'order',
              String(i),
              't',
              '{}',
            ])
          : sql.run('insert into event_outbox (subject, type, body, time) values (?, ?, ?, ?)', [
              String(i),
              'order',
              '{}',
              't',
            ]),
      ),
    );
  });
  const rows = await store.read.all("select subject from event_outbox where type = 'order' order by seq");
  assert.equal(
    rows.map((r) => Number(r.subject)),
    sent,
  );
});

test.run();
