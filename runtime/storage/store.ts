// The database behind every resource: what the runtime needs of it, whichever engine serves it. MikroORM defines
// and migrates the tables from the generated entities; everything else runs as SQL of our own
// (runtime/tables/table.ts) through a dialect. SQLite in the data directory is the default
// (runtime/storage/sqlite-store.ts); DATABASE_URL=postgres:// selects PostgreSQL (runtime/storage/postgres-store.ts),
// for several server processes on one database; runtime/storage/open-store.ts opens the one configured.
import type { EntitySchema, MikroORM } from '@mikro-orm/core';
import type { Dialect } from './dialect.js';
import { quoteIdentifier } from './dialect.js';
import { schemaMigrationEntity } from './schema-versions.js';
import { outboxEntity } from './outbox.js';
import { isCounted, scopeCountEntity } from './scope-counts.js';
import { refreshTokenEntity } from './refresh-token-table.js';
import type { Sql } from './sql.js';
import type { Row } from '../model/records.js';

export interface Store {
  orm: MikroORM;
  dialect: Dialect;
  /** Reads of our own outside a transaction. */
  read: Sql;
  /** Reads that may take long (a count over a filter, a whole-result list), where they hold up no request. */
  slowRead: Sql;
  /**
   * Statements of our own in one transaction: all stored, or (when fn throws) none. On PostgreSQL fn may run
   * more than once (a lost race is run again): it does nothing outside its statements that a second run repeats.
   */
  transaction<T>(fn: (sql: Sql) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Where other processes write too (PostgreSQL): tells them that who-may-do-what changed, and hears when they
   * do, so every process drops its cached grants (runtime/access/authorization.ts) within moments of the commit.
   */
  accessChanges?: { announce(): void; subscribe(heard: () => void): void };
  /**
   * SQLite, whose one writer serializes every write (runtime/storage/change-mark.ts): a mark over these tables
   * that moves whenever one of their rows may have changed, NaN while uncommitted changes to them are pending.
   * Taken before a read and unchanged inside a later write's transaction: the rows read are the rows stored.
   */
  changeMark?(tables: string[]): () => number;
  /** Whether another process changed the schema since this store brought it to the model (readiness). */
  schemaChanged(): Promise<boolean>;
  /**
   * The statements kept prepared (SQLite, on every read connection) or kept as numbered texts (PostgreSQL, the
   * first 500 shapes also prepared by name on each connection):
   * bounded, and one per shape of statement rather than per length of a list of values.
   */
  statementsKept(): Promise<number>;
  /** Write transactions waiting for the connection (SQLite: the group commit's queue). */
  writeQueueDepth?: () => number;
  /**
   * Where writes can lose a race (PostgreSQL): how many transactions were run again since start, by why, and how
   * many were answered ABORTED after the last run.
   */
  lostRaces?: () => { serialization: number; deadlock: number; aborted: number };
  close(): Promise<void>;
}

export interface TransactionOptions {
  /**
   * The transaction's checks span rows that no row lock covers (who may grant what): PostgreSQL runs it
   * SERIALIZABLE. SQLite's single writer serializes every transaction anyway.
   */
  serializable?: boolean;
}

/**
 * Reads that may take long (a filter no index serves, a count, a long skip): each stopped after timeoutMs
 * (DEADLINE_EXCEEDED), and at most `queue` waiting for the database beyond those running (past it, UNAVAILABLE).
 */
export interface ReadLimits {
  timeoutMs: number;
  queue: number;
}

export const defaultReadLimits: ReadLimits = { timeoutMs: 10_000, queue: 64 };

export type StatementKind = 'read' | 'slow_read' | 'write';
export type StatementObserver = (kind: StatementKind, seconds: number) => void;

/**
 * Statements timed as they run; observe gets seconds. Made for every transaction, and each statement goes
 * through it: methods on the prototype and the statement's own promise passed on (no frame of its own).
 */
class TimedSql implements Sql {
  readonly counts?: Sql['counts'];
  readonly atCommit?: Sql['atCommit'];
  readonly valuesNow?: Sql['valuesNow'];

  constructor(
    private readonly sql: Sql,
    private readonly kind: StatementKind,
    private readonly observe: StatementObserver,
  ) {
    if (sql.counts) this.counts = sql.counts;
    if (sql.atCommit) this.atCommit = sql.atCommit;
    if (sql.valuesNow) this.valuesNow = (text, params) => this.valuesTimedNow(text, params);
  }

  all(text: string, params?: unknown[]): Promise<Row[]> {
    return this.timed(performance.now(), this.sql.all(text, params));
  }

  values(text: string, params?: unknown[]): Promise<unknown[][]> {
    return this.timed(performance.now(), this.sql.values(text, params));
  }

  run(text: string, params?: unknown[]): Promise<number> {
    return this.timed(performance.now(), this.sql.run(text, params));
  }

  private timed<T>(started: number, statement: Promise<T>): Promise<T> {
    const observed = () => this.observe(this.kind, (performance.now() - started) / 1000);
    statement.then(observed, observed);
    return statement;
  }

  private valuesTimedNow(text: string, params?: unknown[]): unknown[][] {
    const started = performance.now();
    try {
      return this.sql.valuesNow!(text, params);
    } finally {
      this.observe(this.kind, (performance.now() - started) / 1000);
    }
  }
}

export function timedSql(sql: Sql, kind: StatementKind, observe: StatementObserver): Sql {
  return new TimedSql(sql, kind, observe);
}

/** The store with every statement of our own timed (the ORM's, at start, are not). */
export function timeStatements(store: Store, observe: StatementObserver): Store {
  return {
    ...store,
    read: timedSql(store.read, 'read', observe),
    slowRead: timedSql(store.slowRead, 'slow_read', observe),
    transaction: (fn, options) => store.transaction((sql) => fn(timedSql(sql, 'write', observe)), options),
  };
}

/** Where the data lives: a SQLite file, or a PostgreSQL database. */
export type Database = { engine: 'sqlite'; file: string } | { engine: 'postgresql'; url: string };

/** The generated entities and the runtime's own tables. */
export const storedEntities = (entities: EntitySchema[]) => [
  ...entities,
  outboxEntity as EntitySchema,
  scopeCountEntity as EntitySchema,
  schemaMigrationEntity as EntitySchema,
  refreshTokenEntity as EntitySchema,
];

/** The tables whose per-scope counts are kept (runtime/storage/scope-counts.ts). */
export function countedTables(orm: MikroORM) {
  return Object.values(orm.getMetadata().getAll())
    .filter(isCounted)
    .map((m) => ({
      collection: m.tableName,
      table: quoteIdentifier(m.tableName),
      parentColumn: quoteIdentifier(m.properties.parentUid.fieldNames[0]),
    }));
}
