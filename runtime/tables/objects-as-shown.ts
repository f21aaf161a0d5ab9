// Object columns whose stored JSON is their answer as it is (answer-json.ts showsAsStored), found at start on
// SQLite, where the database renders answers. Every write stores such an object as it is shown (table.ts); rows
// written before (by an older version, or in another member order by a patch of one member) are brought to that
// form once, and the result is recorded with the shape checked (runtime/storage/stored-shapes.ts), so that the
// next start reads one row. A row holding a member the spec no longer has keeps it until its object is written
// again (this step drops nothing), and its column keeps being rebuilt at every read, which leaves that member out.
import { forgetShapesBut, recordShape, recordedShape } from '../storage/stored-shapes.js';
import type { Store } from '../storage/store.js';
import { objectJson } from './answer-json.js';
import type { Table } from './table.js';

/** Marks each table's object columns that hold their answers (Table.storedAsShown), bringing old rows to it. */
export async function findObjectsAsShown(store: Store, tables: readonly Table[]): Promise<void> {
  // PostgreSQL's jsonb orders an object's members its own way: its answers are shaped in JavaScript.
  const json = store.dialect.json;
  if (!json) return;
  const kept: string[] = [];
  for (const table of tables)
    for (const [prop, f] of table.objectsWrittenAsShown()) {
      const column = table.sqlColumn(prop);
      const rebuilt = objectJson(json, column, f);
      if (!rebuilt) continue;
      const name = `${table.sqlName}.${column}`;
      kept.push(name);
      const recorded = await recordedShape(store.read, name);
      let asShown = recorded?.shape === rebuilt && recorded.asShown;
      if (recorded?.shape !== rebuilt)
        asShown = await store.transaction(async (sql) => {
          const members = Object.keys(f.fields ?? {}).map((m) => `'${m.replace(/'/g, "''")}'`);
          const differs = `nullif(${column}, 'null') is not ${rebuilt}`;
          // Invalid JSON (written by hand) is left as it is, and read as it is read today.
          const checked = `${column} is not null and json_valid(${column})`;
          const unknownMember =
            `exists (select 1 from json_each(${column}) where json_type(${column}) = 'object' and type <> 'null'` +
            (members.length > 0 ? ` and key not in (${members.join(', ')}))` : ')');
          await sql.run(
            `update ${table.sqlName} set ${column} = ${rebuilt} where ${checked} and ${differs} and not ${unknownMember}`,
          );
          const [left] = await sql.all(
            `select 1 as "left" from ${table.sqlName} where ${column} is not null and ` +
              `case when json_valid(${column}) then ${differs} else 1 end limit 1`,
          );
          await recordShape(sql, name, rebuilt, left === undefined);
          return left === undefined;
        });
      if (asShown) table.storedAsShown.add(prop);
    }
  // A column the spec has stopped keeping as shown (a member made input-only: it is stored, never shown) is
  // written otherwise from now on: were it kept as shown again, its rows must be checked again.
  await store.transaction((sql) => forgetShapesBut(sql, kept));
}
