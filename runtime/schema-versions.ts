// Versioned schema changes, on either engine. The spec declares the version of the stored schema
// (spec/api.yaml schemaVersion, raised with each change of the tables); a start, or npm run migrate, brings the
// database to the model with MikroORM's comparison and records what it applied in schema_migrations: the
// version, the time and the statements. Nothing is ever dropped: a field a spec removed keeps its column and
// data. A database recorded at a higher version than the code's was migrated by newer code, whose columns this
// code would leave unset: it is refused, before anything is changed.
import { EntitySchema, type MikroORM } from '@mikro-orm/core';
import { ConfigError } from './config.js';
import { refuseRepeatedKeys } from './storage/natural-keys.js';

interface SchemaMigration {
  id: number;
  version: number;
  appliedTime: string;
  statements: string;
}

export const schemaMigrationEntity = new EntitySchema<SchemaMigration>({
  name: 'SchemaMigration',
  tableName: 'schema_migrations',
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    version: { type: 'integer' },
    appliedTime: { type: 'text' },
    statements: { type: 'text' },
  },
});

/** Changes are added, never dropped: compare with the same options everywhere, so a kept column is no change. */
export const additive = { safe: true, dropTables: false, wrap: false };

type Execute = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/** The highest version recorded; 0 for a database that has no record (new, or made before versions). */
export async function recordedVersion(execute: Execute): Promise<number> {
  try {
    const [row] = await execute('select max(version) as version from schema_migrations');
    return Number(row?.version ?? 0);
  } catch {
    return 0;
  }
}

export function refuseNewer(recorded: number, code: number): void {
  if (recorded > code)
    throw new ConfigError(
      `DATABASE_URL: the database's schema is at version ${recorded}, newer than this server's ${code} ` +
        '(spec/api.yaml schemaVersion): a newer version of the server migrated it. Run that version, or restore ' +
        'a backup taken before the upgrade.',
    );
}

export interface MigrationPlan {
  /** the version recorded in the database (0: none) */
  from: number;
  /** the code's version */
  to: number;
  /** what would be applied; empty when the tables already match the model */
  statements: string;
}

/** What bringing the database to the model would do; refuses a database newer than the code. */
export async function planMigration(orm: MikroORM, version: number): Promise<MigrationPlan> {
  const connection = orm.em.getConnection();
  const from = await recordedVersion((sql, params) => connection.execute(sql, params));
  refuseNewer(from, version);
  const statements = (await orm.getSchemaGenerator().getUpdateSchemaSQL(additive)).trim();
  return { from, to: version, statements };
}

/**
 * Brings the database to the model and records it; resolves to the plan carried out. The caller holds
 * whatever keeps two processes from migrating at once (PostgreSQL: an advisory lock).
 */
export async function migrate(orm: MikroORM, version: number): Promise<MigrationPlan> {
  const plan = await planMigration(orm, version);
  if (plan.statements === '' && plan.from === version) return plan;
  const connection = orm.em.getConnection();
  // A natural key's unique index cannot be made over twins: said before anything changes.
  if (plan.statements !== '') await refuseRepeatedKeys(orm, (sql) => connection.execute(sql));
  if (plan.statements !== '') await orm.getSchemaGenerator().execute(plan.statements);
  await connection.execute('insert into schema_migrations (version, applied_time, statements) values (?, ?, ?)', [
    version,
    new Date().toISOString(),
    plan.statements,
  ]);
  return plan;
}
