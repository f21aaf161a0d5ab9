// Writes of hand-written behaviour: statements on declared resources inside one transaction, the event the
// served operation declares recorded with them, and the access caches told of what changed after the commit.
// A handler cannot forget the event or the cache, and never reaches the store behind them.
import type { ResourceModel } from './model.js';
import type { Row } from './records.js';
import type { Resources } from './resources.js';
import type { Sql } from './sql.js';
import type { Order } from './table.js';
import { groupOf } from './outbox.js';

/** The event the operation being served declares, and who acts. */
export interface DeclaredEvent {
  type?: string;
  actor?: string;
}

const byUid: Order[] = [{ property: 'uid', desc: false }];

export class Writes {
  /** the resources written, for the access caches */
  readonly written = new Set<ResourceModel>();

  constructor(
    private readonly sql: Sql,
    private readonly resources: Resources,
    private readonly declared: DeclaredEvent,
  ) {}

  /** Reads inside the transaction: they see its own writes. */
  async find(r: ResourceModel, where: Record<string, unknown>, limit = -1): Promise<Row[]> {
    return this.resources.table(r.type).find(where, byUid, limit, 0, this.sql);
  }

  async get(r: ResourceModel, uid: string): Promise<Row | null> {
    return this.resources.table(r.type).get(uid, this.sql);
  }

  async insert(r: ResourceModel, row: Row): Promise<void> {
    await this.resources.table(r.type).insert(this.sql, row);
    this.written.add(r);
  }

  async update(r: ResourceModel, uid: string, changes: Row): Promise<void> {
    await this.resources.table(r.type).update(this.sql, uid, changes);
    this.written.add(r);
  }

  async delete(r: ResourceModel, uid: string): Promise<void> {
    await this.resources.table(r.type).delete(this.sql, uid);
    this.written.add(r);
  }

  /** Records the served operation's declared event about a record of r. */
  async recordEvent(r: ResourceModel, subject: string, body: Row): Promise<void> {
    if (!this.declared.type) throw new Error(`the operation writing ${r.collection} declares no event`);
    await this.resources.recordEvent(this.sql, {
      type: this.declared.type,
      subject,
      groupUid: groupOf(this.resources.model, r, subject),
      actor: this.declared.actor ?? null,
      body,
    });
  }
}
