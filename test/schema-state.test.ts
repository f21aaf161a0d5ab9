// Opening a store skips MikroORM's schema comparison only when the record says the database has the model's
// schema (runtime/schema-state.ts): a changed model, or a schema changed by anyone since, is compared and
// migrated as before.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { EntitySchema } from '@mikro-orm/core';
import { SchemaGenerator } from '@mikro-orm/better-sqlite';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openStore } from '../runtime/store.js';

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

/** Opens and closes a store on file; says whether it compared the schema (ran updateSchema). */
async function open(file: string, entities: EntitySchema[]): Promise<boolean> {
  const updateSchema = SchemaGenerator.prototype.updateSchema;
  let compared = false;
  SchemaGenerator.prototype.updateSchema = function (...args) {
    compared = true;
    return updateSchema.apply(this, args);
  };
  try {
    await (await openStore({ engine: 'sqlite', file }, entities)).close();
  } finally {
    SchemaGenerator.prototype.updateSchema = updateSchema;
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

test.run();
