// The SQLite store: the file in the data directory, through MikroORM (schema created or updated at open) and
// better-sqlite3. Writes go through one connection, committed in groups (runtime/storage/group-commit.ts); reads
// through a read-only connection, long reads on a worker thread (runtime/storage/slow-reads.ts).
import { MikroORM } from '@mikro-orm/better-sqlite';
import type { EntitySchema } from '@mikro-orm/core';
import { existsSync } from 'node:fs';
import { sqlite } from './dialect.js';
import { privateFile } from './data-dir.js';
import { ensureSchema, schemaStateEntity } from './schema-state.js';
import { markedColumnEntity } from './marked-columns.js';
import type { StoredSchema } from './schema-versions.js';
import { buildCounts } from './scope-counts.js';
import { openSlowReads } from './slow-reads.js';
import { GroupCommit } from './group-commit.js';
import { ChangeMark } from './change-mark.js';
import { startWalCheckpoints } from './wal-checkpoints.js';
import { finalizePrepared, openReadConnection, type ConnectionPool } from './sql.js';
import {
  countedTables,
  defaultReadLimits,
  storedEntities,
  timedSql,
  type ReadLimits,
  type StatementObserver,
  type Store,
} from './store.js';

/** MikroORM on the file, the tables not yet compared with the model (npm run migrate reads them first). */
export function openSqliteOrm(databaseFile: string, entities: EntitySchema[]): Promise<MikroORM> {
  // SQLite creates a database 0644 and its WAL and shared memory files with the database's mode: made 0600 first,
  // all three are this user's alone.
  privateFile(databaseFile);
  for (const file of [`${databaseFile}-wal`, `${databaseFile}-shm`]) if (existsSync(file)) privateFile(file);
  return MikroORM.init({
    dbName: databaseFile,
    entities: [...storedEntities(entities), schemaStateEntity as EntitySchema, markedColumnEntity as EntitySchema],
    debug: false,
    allowGlobalContext: false,
    // Keep the default single connection: SQLite serializes writers anyway, and one connection means
    // transactions queue in-process instead of failing with SQLITE_BUSY.
    pool: { min: 1, max: 1 },
  });
}

/** observe: statements on the request path are timed around the driver's call (runtime/storage/sql.ts). */
export async function openSqliteStore(
  databaseFile: string,
  entities: EntitySchema[],
  schema: StoredSchema | number = 1,
  observe?: StatementObserver,
  limits: ReadLimits = defaultReadLimits,
): Promise<Store> {
  const orm = await openSqliteOrm(databaseFile, entities);
  performance.mark('orm init');
  const connection = orm.em.getConnection();
  await connection.execute('pragma journal_mode = WAL');
  // At start, another process (an import) is waited for.
  await connection.execute('pragma busy_timeout = 10000');
  await connection.execute('pragma synchronous = NORMAL');
  try {
    await ensureSchema(orm, schema);
  } catch (e) {
    // A refused database leaves no connection open: a caller that goes on (a test, a CLI) can still exit.
    await orm.close();
    throw e;
  }
  performance.mark('schema');
  // Serving, no busy wait on the writing connection: it would hold the event loop. A transaction waits for
  // another process's (an import's) at its BEGIN instead (runtime/storage/group-commit.ts).
  await connection.execute('pragma busy_timeout = 0');
  // Checkpoints run on a worker thread, not in a commit on the event loop (runtime/storage/wal-checkpoints.ts).
  await connection.execute('pragma wal_autocheckpoint = 0');
  const checkpoints = startWalCheckpoints(databaseFile);
  const pool = connection.getKnex().client as ConnectionPool;
  const read = await openReadConnection(databaseFile, observe && ((seconds) => observe('read', seconds)));
  // Slow reads run on other threads: timed from the request to the answer.
  const slowReads = openSlowReads(databaseFile, limits);
  const slowRead = observe ? timedSql(slowReads, 'slow_read', observe) : slowReads;
  const writer = await pool.acquireConnection();
  await pool.releaseConnection(writer);
  const mark: ChangeMark = new ChangeMark(writer as ConstructorParameters<typeof ChangeMark>[0], (fn): Promise<void> =>
    writes.transaction(fn),
  );
  const writes: GroupCommit = new GroupCommit(pool, observe && ((seconds) => observe('write', seconds)), {
    began: (sql) => mark.began(sql),
    ended: () => {
      mark.ended();
      checkpoints.written();
    },
  });
  await writes.transaction((sql) => buildCounts(sql, countedTables(orm)));
  performance.mark('scope counts');
  // SQLite counts every change of the schema, by any connection: a different number means another process's.
  const schemaCookie = async () => (await read.all('select schema_version as v from pragma_schema_version'))[0].v;
  const started = await schemaCookie();
  return {
    orm,
    dialect: sqlite,
    read,
    slowRead,
    transaction: (fn) => writes.transaction(fn),
    changeMark: (tables) => mark.over(tables),
    schemaChanged: async () => (await schemaCookie()) !== started,
    writeQueueDepth: () => writes.depth,
    statementsKept: async () => read.statementsKept() + (await slowReads.statementsKept()),
    close: async () => {
      await read.close();
      await slowReads.close();
      await checkpoints.close();
      await finalizePrepared(pool);
      await orm.close();
    },
  };
}
