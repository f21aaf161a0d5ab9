// Writes of hand-written behaviour: statements on declared resources inside one transaction, the event the
// served operation declares recorded with them, and the access caches told of what changed after the commit.
// A handler cannot forget the event or the cache, and never reaches the store behind them.
import type { Condition } from '../tables/condition.js';
import type { ApiModel, ResourceModel } from '../model/api-model.js';
import type { RecordTypes, Row } from '../model/records.js';
import type { Sql } from '../storage/sql.js';
import type { RowLock } from '../storage/dialect.js';
import type { Order, Table } from '../tables/table.js';
import { groupOf, type NewEvent } from '../storage/outbox.js';
import type { WriteKind } from './grant-changes.js';

/** The event the operation being served declares, and who acts. */
export interface DeclaredEvent {
  type?: string;
  actor?: string;
}

type Collection = keyof RecordTypes & string;

/** What writes need of the standard methods (runtime/resources/standard-methods.ts): the model, tables, events. */
export interface WriteTarget {
  readonly model: ApiModel;
  tableOf<C extends Collection>(collection: C): Table<RecordTypes[C]>;
  recordEvent(sql: Sql, e: NewEvent): Promise<void>;
}

const byUid: Order[] = [{ property: 'uid', desc: false }];

export class Writes {
  /** what was written (an update: which fields), for the access caches */
  readonly written: { r: ResourceModel; kind: WriteKind; fields?: string[] }[] = [];

  constructor(
    private readonly sql: Sql,
    private readonly resources: WriteTarget,
    private readonly declared: DeclaredEvent,
  ) {}

  /** A collection's table, typed by its generated record type (generated/types.ts fills RecordTypes). */
  private tableOf<C extends Collection>(collection: C) {
    return this.resources.tableOf(collection);
  }

  private note(collection: string, kind: WriteKind, fields?: string[]): void {
    this.written.push({ r: this.resources.model.resources[collection], kind, fields });
  }

  /** This write's statements, for the runtime's own rows kept with it (a quota counted in the database). */
  get statements(): Sql {
    return this.sql;
  }

  /** Reads inside the transaction: they see its own writes. */
  async find<C extends Collection>(
    collection: C,
    where: Condition<RecordTypes[C]>,
    limit = -1,
  ): Promise<RecordTypes[C][]> {
    return this.tableOf(collection).find(where, byUid, limit, 0, this.sql);
  }

  async count<C extends Collection>(collection: C, where: Condition<RecordTypes[C]>): Promise<number> {
    return this.tableOf(collection).count(where, this.sql);
  }

  /** lock: the row locked until the commit (runtime/storage/dialect.ts's RowLock), for what a check relies on. */
  async get<C extends Collection>(collection: C, uid: string, lock?: RowLock): Promise<RecordTypes[C] | null> {
    return this.tableOf(collection).get(uid, this.sql, lock);
  }

  async insert<C extends Collection>(collection: C, record: RecordTypes[C]): Promise<void> {
    await this.tableOf(collection).insert(this.sql, record);
    this.note(collection, 'create');
  }

  async update<C extends Collection>(collection: C, uid: string, changes: Partial<RecordTypes[C]>): Promise<void> {
    await this.tableOf(collection).update(this.sql, uid, changes);
    this.note(collection, 'update', Object.keys(changes));
  }

  async delete<C extends Collection>(collection: C, uid: string): Promise<void> {
    await this.tableOf(collection).delete(this.sql, uid);
    this.note(collection, 'delete');
  }

  /**
   * Records the served operation's declared event about a record of the collection. An internal event (the
   * reference's INTERNAL audience) belongs to no group, so no subscription receives it.
   */
  async recordEvent(
    collection: Collection,
    subject: string,
    body: Row,
    audience: 'customer' | 'internal' = 'customer',
  ): Promise<void> {
    const r = this.resources.model.resources[collection];
    if (!this.declared.type) throw new Error(`the operation writing ${collection} declares no event`);
    await this.resources.recordEvent(this.sql, {
      type: this.declared.type,
      subject,
      groupUid: audience === 'internal' ? null : groupOf(this.resources.model, r, subject),
      actor: this.declared.actor ?? null,
      body,
    });
  }
}
