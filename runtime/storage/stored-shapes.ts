// What a SQLite database records of the JSON its object columns hold: for each, the shape its rows were last
// checked against (the spec's members of the object, in order) and whether every row held its answer as it is
// then (runtime/tables/objects-as-shown.ts). A start whose shape is the recorded one reads the record instead
// of every row again.
import { EntitySchema } from '@mikro-orm/core';
import type { Sql } from './sql.js';

interface StoredShape {
  name: string;
  shape: string;
  asShown: boolean;
}

export const storedShapeEntity = new EntitySchema<StoredShape>({
  name: 'StoredShape',
  tableName: 'stored_shapes',
  properties: {
    name: { type: 'text', primary: true },
    shape: { type: 'text' },
    asShown: { type: 'boolean' },
  },
});

/** The recorded shape of the column `name` ("table.column"), and whether its rows held their answers. */
export async function recordedShape(sql: Sql, name: string): Promise<{ shape: string; asShown: boolean } | undefined> {
  const [row] = await sql.all('select shape, as_shown as "asShown" from stored_shapes where name = ?', [name]);
  return row && { shape: String(row.shape), asShown: row.asShown === 1 || row.asShown === true };
}

/** Forgets the records of every column but these: rows written while a column was not kept as shown are unchecked. */
export async function forgetShapesBut(sql: Sql, kept: readonly string[]): Promise<void> {
  const [stale] = await sql.all(
    `select 1 as "stale" from stored_shapes where name not in (select value from json_each(?)) limit 1`,
    [JSON.stringify(kept)],
  );
  if (stale)
    await sql.run('delete from stored_shapes where name not in (select value from json_each(?))', [
      JSON.stringify(kept),
    ]);
}

export async function recordShape(sql: Sql, name: string, shape: string, asShown: boolean): Promise<void> {
  await sql.run(
    'insert into stored_shapes (name, shape, as_shown) values (?, ?, ?) ' +
      'on conflict (name) do update set shape = excluded.shape, as_shown = excluded.as_shown',
    [name, shape, asShown ? 1 : 0],
  );
}
