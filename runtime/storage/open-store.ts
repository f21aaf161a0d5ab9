// Opening the store a configuration names: SQLite in the data directory, or PostgreSQL. A file of its own, so that
// the engines import the Store they implement and nothing imports them but this.
import type { EntitySchema } from '@mikro-orm/core';
import type { StoredSchema } from './schema-versions.js';
import {
  defaultReadLimits,
  timeStatements,
  type Database,
  type ReadLimits,
  type StatementObserver,
  type Store,
} from './store.js';

/**
 * schema: the model's version and resources (runtime/storage/schema-versions.ts); the database is migrated to
 * it. observe: how long each statement of our own took.
 */
export async function openStore(
  database: Database,
  entities: EntitySchema[],
  schema: StoredSchema | number = 1,
  observe?: StatementObserver,
  limits: ReadLimits = defaultReadLimits,
): Promise<Store> {
  if (database.engine === 'postgresql') {
    const store = await (await import('./postgres-store.js')).openPostgresStore(database.url, entities, schema, limits);
    return observe ? timeStatements(store, observe) : store;
  }
  return (await import('./sqlite-store.js')).openSqliteStore(database.file, entities, schema, observe, limits);
}
