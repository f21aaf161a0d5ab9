// Versioned schema changes, on either engine. The spec declares the version of the stored schema
// (spec/api.yaml schemaVersion, raised with each change of the tables); a start, or npm run migrate, brings the
// database to the model with MikroORM's comparison and records what it applied in schema_migrations: the
// version, the time and the statements. Nothing is ever dropped: a field a spec removed keeps its column and
// data. A database recorded at a higher version than the code's was migrated by newer code, whose columns this
// code would leave unset: it is refused, before anything is changed.
import { EntitySchema, type MikroORM } from '@mikro-orm/core';
import { SchemaComparator, type DatabaseSchema, type TableDifference } from '@mikro-orm/knex';
import type { ApiModel, ResourceModel } from '../model/api-model.js';
import { applyRowSteps, convertRows, describeRowSteps, rowSteps, type RowStep } from './stored-rows.js';
import { ConfigError } from '../model/errors.js';
import { refuseRepeatedKeys } from './natural-keys.js';
import { forgetMarkedColumns, markedColumnEntity } from './marked-columns.js';

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

/** What a database is brought to: the spec's schema version, and its resources for the changes old rows go through. */
export interface StoredSchema {
  version: number;
  resources?: ApiModel['resources'];
}

export interface MigrationPlan {
  /** the version recorded in the database (0: none) */
  from: number;
  /** the code's version */
  to: number;
  /** what would be applied; empty when the tables already match the model */
  statements: string;
  /** what old rows go through (runtime/storage/stored-rows.ts) */
  steps: RowStep[];
  /** why it cannot be applied: a column whose type would change in place, stored values that do not convert */
  refused: string[];
}

type Comparison = { changedTables: Record<string, TableDifference>; newTables: Record<string, unknown> };

/**
 * The statements that bring the tables to the model, and the columns the database has. MikroORM compares; what
 * it would do to existing columns is taken out: a column it takes for renamed (a removed field's and a new
 * one's of the same type) is a new column, the removed one kept; a column whose type differs is refused (the
 * generator gives a retyped field a new column, so this is a table changed without a new schemaVersion).
 */
async function compareTables(orm: MikroORM) {
  const generator = orm.getSchemaGenerator() as unknown as {
    // private in the types: the one way to the comparison that getUpdateSchemaSQL turns into SQL at once
    prepareSchemaForComparison(o: object): Promise<{ fromSchema: DatabaseSchema; toSchema: DatabaseSchema }>;
    diffToSQL(diff: unknown, o: object): Promise<string>;
  };
  const { fromSchema, toSchema } = await generator.prepareSchemaForComparison({ ...additive });
  const diff = new SchemaComparator(orm.em.getPlatform() as never).compare(
    fromSchema,
    toSchema,
  ) as unknown as Comparison;
  const refused: string[] = [];
  for (const table of Object.values(diff.changedTables)) {
    for (const column of Object.values(table.renamedColumns)) table.addedColumns[column.name] = column;
    for (const [name, change] of Object.entries(table.changedColumns))
      if (change.changedProperties.has('type'))
        refused.push(
          `${table.name}.${name}: the column holds ${change.fromColumn.type} in the database and the spec stores ` +
            `${change.column.type} there: a table changed under the same schemaVersion (run npm run generate: it says what to raise)`,
        );
    Object.assign(table, { renamedColumns: {}, removedColumns: {}, changedColumns: {} });
  }
  const statements = (await generator.diffToSQL(diff, { ...additive })).trim();
  const columns = (table: string) => {
    const found = fromSchema.getTable(table);
    return found ? new Set(found.getColumns().map((c: { name: string }) => c.name)) : undefined;
  };
  return { statements, refused, columns };
}

/** The statements the tables still need: empty when they match the model. */
export async function pendingStatements(orm: MikroORM): Promise<string> {
  return (await compareTables(orm)).statements;
}

/** What bringing the database to the model would do; refuses a database newer than the code. */
export async function planMigration(orm: MikroORM, schema: StoredSchema | number): Promise<MigrationPlan> {
  const { version, resources = {} } = typeof schema === 'number' ? { version: schema } : schema;
  const connection = orm.em.getConnection();
  const execute: Execute = (sql, params) => connection.execute(sql, params);
  const from = await recordedVersion(execute);
  refuseNewer(from, version);
  const { statements, refused, columns } = await compareTables(orm);
  const metadata = orm.getMetadata();
  const stored = (r: ResourceModel, field?: string) => {
    const meta = metadata.find(r.type)!;
    return field === undefined ? meta.tableName : meta.properties[field].fieldNames[0];
  };
  const steps = rowSteps(resources, stored, columns, from);
  refused.push(...(await convertRows(execute, steps)));
  return { from, to: version, statements, steps, refused };
}

/** The plan's statements, one by one (SQLite runs one statement per call). */
const each = (statements: string) =>
  statements
    .split(/;\s*$/m)
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * Brings the database to the model and records it, in one transaction; resolves to the plan carried out.
 * A refused plan changes nothing. The caller holds whatever keeps two processes from migrating at once
 * (PostgreSQL: an advisory lock).
 */
export async function migrate(orm: MikroORM, schema: StoredSchema | number): Promise<MigrationPlan> {
  const plan = await planMigration(orm, schema);
  if (plan.refused.length > 0)
    throw new ConfigError(`the database cannot be migrated as the spec stands:\n  ${plan.refused.join('\n  ')}`);
  if (plan.statements === '' && plan.steps.length === 0 && plan.from === plan.to) return plan;
  const connection = orm.em.getConnection();
  // A natural key's unique index cannot be made over twins: said before anything changes.
  if (plan.statements !== '') await refuseRepeatedKeys(orm, (sql) => connection.execute(sql));
  await connection.transactional(async (trx) => {
    const execute: Execute = (sql, params) => connection.execute(sql, params, 'all', trx);
    for (const statement of each(plan.statements)) await execute(statement);
    await applyRowSteps(execute, plan.steps);
    // Rows a data migration rewrote no longer carry the marks a pass at start recorded (SQLite): the next pass looks.
    if (plan.steps.length > 0 && orm.getMetadata().find(markedColumnEntity.meta.className))
      await execute(forgetMarkedColumns);
    await execute('insert into schema_migrations (version, applied_time, statements) values (?, ?, ?)', [
      plan.to,
      new Date().toISOString(),
      [plan.statements, ...describeRowSteps(plan.steps)].filter(Boolean).join('\n'),
    ]);
  });
  return plan;
}
