// Which columns of a SQLite database a pass has brought, every row, to a mark (runtime/tables/stored-objects.ts),
// so that a later start skips the pass. A hint only: rows written afterwards by a version or a spec that does
// not mark them are read as unmarked rows always are, so no read relies on this record.
import { EntitySchema } from '@mikro-orm/core';
import type { Sql } from './sql.js';

interface MarkedColumn {
  /** table.column */
  name: string;
  mark: string;
}

export const markedColumnEntity = new EntitySchema<MarkedColumn>({
  name: 'MarkedColumn',
  tableName: 'marked_columns',
  properties: {
    name: { type: 'text', primary: true },
    mark: { type: 'text' },
  },
});

/** Forgets every column's mark: after a data migration, whose rewrites of stored values carry none. */
export const forgetMarkedColumns = 'delete from marked_columns';

/** The mark the last finished pass brought this column to, if one did. */
export async function markedWith(sql: Sql, name: string): Promise<string | undefined> {
  const [row] = await sql.values('select mark from marked_columns where name = ?', [name]);
  return row?.[0] as string | undefined;
}

export async function recordMarked(sql: Sql, name: string, mark: string): Promise<void> {
  await sql.run(
    'insert into marked_columns (name, mark) values (?, ?) on conflict (name) do update set mark = excluded.mark',
    [name, mark],
  );
}
