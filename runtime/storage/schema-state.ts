// The schema a SQLite database was last brought to, so that a start whose model has not changed skips
// MikroORM's comparison of the whole schema (it reads every table's columns and indexes: tens of ms of each
// start). Exact: the record holds a hash of the DDL the model generates with the model's schema version, and
// SQLite's schema_version, taken under the write lock once the database was seen to match the model. Any later
// change to the schema, by any process, changes schema_version, and the next start compares again (and
// migrates, runtime/storage/schema-versions.ts).
import { createHash } from 'node:crypto';
import { EntitySchema } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/better-sqlite';
import { migrate, pendingStatements, type StoredSchema } from './schema-versions.js';

interface SchemaState {
  id: number;
  ddlHash: string;
  schemaVersion: number;
}

export const schemaStateEntity = new EntitySchema<SchemaState>({
  name: 'SchemaState',
  tableName: 'schema_state',
  properties: {
    id: { type: 'number', primary: true },
    ddlHash: { type: 'string' },
    schemaVersion: { type: 'number' },
  },
});

type Connection = ReturnType<MikroORM['em']['getConnection']>;

async function isRecorded(connection: Connection, ddlHash: string): Promise<boolean> {
  try {
    const [state] = await connection.execute(
      'select s.ddl_hash as ddlHash, s.schema_version as recorded, v.schema_version as current ' +
        'from schema_state s, pragma_schema_version v where s.id = 1',
    );
    return state !== undefined && state.ddlHash === ddlHash && state.recorded === state.current;
  } catch {
    // no schema_state table yet: a new database, or one made before the record was kept
    return false;
  }
}

/** Creates or migrates the schema to the model's, unless the record says that the database has it already. */
export async function ensureSchema(orm: MikroORM, schema: StoredSchema | number): Promise<void> {
  const schemaVersion = typeof schema === 'number' ? schema : schema.version;
  const generator = orm.getSchemaGenerator();
  const connection = orm.em.getConnection();
  const ddlHash = createHash('sha256')
    .update(`schema version ${schemaVersion}\n${await generator.getCreateSchemaSQL()}`)
    .digest('hex');
  if (await isRecorded(connection, ddlHash)) return;
  await migrate(orm, schema);
  // The write lock first: no other process can change the schema between the check and the record.
  await connection.execute('begin immediate');
  try {
    if ((await pendingStatements(orm)) === '') {
      const [{ version }] = await connection.execute('select schema_version as version from pragma_schema_version');
      await connection.execute(
        'insert into schema_state (id, ddl_hash, schema_version) values (1, ?, ?) ' +
          'on conflict (id) do update set ddl_hash = excluded.ddl_hash, schema_version = excluded.schema_version',
        [ddlHash, version],
      );
    }
    await connection.execute('commit');
  } catch (e) {
    await connection.execute('rollback');
    throw e;
  }
}
