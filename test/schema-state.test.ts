// Opening a store skips MikroORM's schema comparison only when the record says the database has the model's
// schema (runtime/storage/schema-state.ts): a changed model, or a schema changed by anyone since, is compared and
// migrated as before. Each migration is recorded with its version; a database a newer version migrated is
// refused, and nothing is ever dropped (runtime/storage/schema-versions.ts). PostgreSQL: test/postgres.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { EntitySchema } from '@mikro-orm/core';
import { SchemaComparator } from '@mikro-orm/better-sqlite';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openStore } from '../runtime/storage/open-store.js';

const dir = mkdtempSync(join(tmpdir(), 'schema-state-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const widget = (extra: Record<string, object> = {}) =>
  new EntitySchema<Record<string, unknown>>({
    name: 'Widget',
    tableName: 'widgets',
    properties: {
      uid: { type: 'text', primary: true },
      parentUid: { type: 'text', nullable: true, index: true },
      ...extra,
    },
  });

/** Opens and closes a store on file; says whether it compared the schema with the model. */
async function open(file: string, entities: EntitySchema[], version = 1): Promise<boolean> {
  const compare = SchemaComparator.prototype.compare;
  let compared = false;
  SchemaComparator.prototype.compare = function (...args) {
    compared = true;
    return compare.apply(this, args);
  };
  try {
    await (await openStore({ engine: 'sqlite', file }, entities, version)).close();
  } finally {
    SchemaComparator.prototype.compare = compare;
  }
  return compared;
}

const sqlite = (file: string, statement: string) => {
  const db = new Database(file);
  try {
    const prepared = db.prepare(statement);
    return prepared.reader ? prepared.all() : (prepared.run(), []);
  } finally {
    db.close();
  }
};

test('a new database gets the schema and the record; opened again unchanged, it is not compared', async () => {
  const file = join(dir, 'new.sqlite');
  assert.ok(await open(file, [widget()]));
  assert.equal(sqlite(file, 'select id from schema_state'), [{ id: 1 }]);
  assert.not.ok(await open(file, [widget()]));
  assert.not.ok(await open(file, [widget()]));
});

test('a changed model is compared and migrated, and recorded', async () => {
  const file = join(dir, 'model.sqlite');
  await open(file, [widget()]);
  assert.ok(await open(file, [widget({ colour: { type: 'text', nullable: true } })]));
  assert.ok(sqlite(file, 'pragma table_info(widgets)').some((c) => (c as { name: string }).name === 'colour'));
  assert.not.ok(await open(file, [widget({ colour: { type: 'text', nullable: true } })]));
});

test('a schema changed since the record (another process, by hand) is compared and repaired', async () => {
  const file = join(dir, 'changed.sqlite');
  await open(file, [widget()]);
  sqlite(file, 'drop index widgets_parent_uid_index');
  assert.ok(await open(file, [widget()]));
  assert.equal(sqlite(file, "select name from sqlite_master where name = 'widgets_parent_uid_index'").length, 1);
  assert.not.ok(await open(file, [widget()]));
});

test('each migration is recorded with its version and statements; a newer database is refused untouched', async () => {
  const file = join(dir, 'versions.sqlite');
  await open(file, [widget()], 1);
  await open(file, [widget({ colour: { type: 'text', nullable: true } })], 2);
  const recorded = sqlite(file, 'select version, statements from schema_migrations order by id') as {
    version: number;
    statements: string;
  }[];
  assert.equal(
    recorded.map((r) => r.version),
    [1, 2],
  );
  assert.match(recorded[0].statements, /create table `widgets`/);
  assert.match(recorded[1].statements, /alter table `widgets` add column `colour`/);
  const before = sqlite(file, 'select sql from sqlite_master order by name');
  try {
    await open(file, [widget()], 1);
    assert.unreachable('a database at version 2 opened by code at version 1');
  } catch (e) {
    assert.match((e as Error).message, /schema is at version 2, newer than this server's 1/);
  }
  assert.equal(sqlite(file, 'select sql from sqlite_master order by name'), before);
});

test('a field the model no longer has keeps its column and data', async () => {
  const file = join(dir, 'removed.sqlite');
  await open(file, [widget({ colour: { type: 'text', nullable: true } })]);
  sqlite(file, "insert into widgets (uid, colour) values ('w1', 'blue')");
  assert.ok(await open(file, [widget()], 2));
  assert.equal(sqlite(file, 'select colour from widgets'), [{ colour: 'blue' }]);
  assert.not.ok(await open(file, [widget()], 2), 'the kept column is no change: the next start is not compared');
});

test.run();
