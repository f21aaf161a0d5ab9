// The SQLite database behind every resource, through MikroORM; schema created or updated at open.
import { MikroORM, type EntityManager } from '@mikro-orm/better-sqlite';
import type { EntitySchema } from '@mikro-orm/core';
import { outboxEntity } from './outbox.js';
import { ensureSchema, schemaStateEntity } from './schema-state.js';
import { buildCounts, isCounted, scopeCountEntity } from './scope-counts.js';
import { openSlowReads } from './slow-reads.js';
import { quoteIdentifier } from './sql-filter.js';
import { GroupCommit } from './group-commit.js';
import { finalizePrepared, openReadConnection, type ConnectionPool, type Sql } from './sql.js';

export interface Store {
  orm: MikroORM;
  /** A fresh entity manager for one unit of work. */
  em(): EntityManager;
  /** Reads of our own, on the read-only connection (runtime/sql.ts). */
  read: Sql;
  /** Reads that may take long (a count over a filter, a whole-result list), off the main thread. */
  slowRead: Sql;
  /** Statements of our own in one transaction on the writing connection (committed in groups). */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openStore(databaseFile: string, entities: EntitySchema[]): Promise<Store> {
  const orm = await MikroORM.init({
    dbName: databaseFile,
    entities: [
      ...entities,
      outboxEntity as EntitySchema,
      scopeCountEntity as EntitySchema,
      schemaStateEntity as EntitySchema,
    ],
    debug: false,
    allowGlobalContext: false,
    // Keep the default single connection: SQLite serializes writers anyway, and one connection means
    // transactions queue in-process instead of failing with SQLITE_BUSY.
    pool: { min: 1, max: 1 },
  });
  performance.mark('orm init');
  const connection = orm.em.getConnection();
  await connection.execute('pragma journal_mode = WAL');
  // At start, another process (an import) is waited for.
  await connection.execute('pragma busy_timeout = 10000');
  await connection.execute('pragma synchronous = NORMAL');
  await ensureSchema(orm);
  performance.mark('schema');
  // Serving, no busy wait on the writing connection: it would hold the event loop. A transaction waits for
  // another process's (an import's) at its BEGIN instead (runtime/group-commit.ts).
  await connection.execute('pragma busy_timeout = 0');
  const pool = connection.getKnex().client as ConnectionPool;
  const read = await openReadConnection(databaseFile);
  const slowRead = openSlowReads(databaseFile);
  const writes = new GroupCommit(pool);
  const counted = Object.values(orm.getMetadata().getAll())
    .filter(isCounted)
    .map((m) => ({
      collection: m.tableName,
      table: quoteIdentifier(m.tableName),
      parentColumn: quoteIdentifier(m.properties.parentUid.fieldNames[0]),
    }));
  await writes.transaction((sql) => buildCounts(sql, counted));
  performance.mark('scope counts');
  return {
    orm,
    em: () => orm.em.fork(),
    read,
    slowRead,
    transaction: (fn) => writes.transaction(fn),
    close: async () => {
      await read.close();
      await slowRead.close();
      await finalizePrepared(pool);
      await orm.close();
    },
  };
}
