// Natural keys (a repo's parent and name): each has a unique index (generated/entities.ts), so two records with
// one key are refused by the database, whichever process writes them. A database made before the indexes may
// already hold such twins, on which the index cannot be made: the start is refused, before any change, with one
// line naming the table, the key and a statement that lists them. Which twin to keep is the owner's choice
// (rename or delete the others through the API, then start again), not something a migration may guess.
import type { MikroORM } from '@mikro-orm/core';
import { ConfigError } from '../model/errors.js';
import { ApiError } from '../model/errors.js';
import { quoteIdentifier } from './dialect.js';

type Execute = (sql: string) => Promise<Record<string, unknown>[]>;

/** Every table's natural key as columns, where the model declares one. */
function naturalKeys(orm: MikroORM): { table: string; columns: string[] }[] {
  return Object.values(orm.getMetadata().getAll()).flatMap((meta) =>
    meta.uniques.map((u) => ({
      table: meta.tableName,
      columns: [u.properties ?? []].flat().map((p) => meta.properties[p as string].fieldNames[0]),
    })),
  );
}

/**
 * Refuses a database whose records repeat a natural key, before a migration changes it. Tables not made yet
 * hold nothing. A full read of each keyed table: run only when the schema is about to change.
 */
export async function refuseRepeatedKeys(orm: MikroORM, execute: Execute): Promise<void> {
  for (const { table, columns } of naturalKeys(orm)) {
    const key = columns.map(quoteIdentifier).join(', ');
    const find = `select ${key}, count(*) as n from ${quoteIdentifier(table)} group by ${key} having count(*) > 1`;
    let repeated: Record<string, unknown>[];
    try {
      repeated = await execute(`${find} limit 1`);
    } catch {
      continue; // no such table yet
    }
    if (repeated.length > 0)
      throw new ConfigError(
        `The database's table ${table} holds ${repeated[0].n} records with the same ${columns.join(', ')} ` +
          `(${columns.map((c) => JSON.stringify(repeated[0][c])).join(', ')}), and perhaps more such keys; ` +
          `this version refuses twins and indexes the key as unique. Keep one of each (rename or delete the ` +
          `others), then start again. They are listed by: ${find}`,
      );
  }
}

/** The refusal of a record whose natural key another record has. */
export function alreadyExists(resourceType: string, key: Record<string, unknown>): ApiError {
  const named = Object.entries(key)
    .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
    .join(', ');
  return new ApiError('ALREADY_EXISTS', `Already exists: a ${resourceType} with ${named}`, [
    {
      '@type': 'type.googleapis.com/google.rpc.ResourceInfo',
      resourceType,
      resourceName: named,
      description: `a ${resourceType} with ${named} already exists`,
    },
  ]);
}
