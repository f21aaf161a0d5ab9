// The one implementation of list, get, create, update and delete, shared by every resource of the model.
import { ApiError, failedPrecondition, invalidArgument, notFound } from '../model/errors.js';
import { applyFieldMask, maskedFields, parseFieldMask } from '../model/field-mask.js';
import type { ListRequest } from '../lists/list-request.js';
import { operationOf, type ApiModel, type ResourceModel } from '../model/api-model.js';
import type { PageToken } from '../lists/page-token.js';
import {
  inputObject,
  now,
  outputObject,
  toResource,
  withDefaults,
  fieldList,
  type RecordTypes,
  type ResourceTypes,
  type Row,
} from '../model/records.js';
import { groupOf, outboxEntity, outboxRow, type NewEvent, type OutboxEvent } from '../storage/outbox.js';
import { Writes, type DeclaredEvent } from './writes.js';
import { changesGrants, type WriteKind } from './grant-changes.js';
import { together, type Sql } from '../storage/sql.js';
import { and, equal, everything, type Condition, type Value } from '../tables/condition.js';
import type { Store, TransactionOptions } from '../storage/store.js';
import type { RowLock } from '../storage/dialect.js';
import { Table } from '../tables/table.js';
import { answerFormsOf, type AnswerForm, type AnswerForms } from '../tables/answer-forms.js';
import { checkUid, newChildUid, newUid } from '../model/uid.js';
import type { ListScope } from '../lists/total-count.js';
import { listConditions, listOrder, readPage, type ListResult } from '../lists/list-query.js';
import { holdsSecret, type SecretSeal } from '../storage/secret-seal.js';
import {
  checkExclusive,
  checkReferences,
  deleteWithChildren,
  naturalKeyValues,
  refuseTakenKey,
  refuseTwin,
} from './integrity.js';

/** The most records a list without paging answers, unless configured (V1_LIST_MAX). */
export const defaultWholeListMax = 5000;

/**
 * A check run inside a write's transaction, on the record as it will be stored (and as it was, for an update). It
 * locks the rows it reads and relies on (runtime/storage/dialect.ts's RowLock) until the commit: on PostgreSQL the
 * write runs READ COMMITTED, and waits its turn for those rows instead of losing races.
 */
export type WriteGuard = (sql: Sql, next: Row, current?: Row) => Promise<void>;

/** Who writes, and the steps a create or update runs in its transaction. */
export interface WriteOptions {
  /** the identity making the change, recorded with its event */
  actor?: string;
  /**
   * a hand-written create step: completes the record; reveal adds fields to the create response only. What it
   * reads and relies on it locks (a quota's count: the row whose lock makes such writes take turns).
   */
  prepare?: (record: Row, transaction: Writes) => Promise<{ record: Row; reveal?: Row }>;
  /** checks the record as it will be stored (no escalation) */
  guard?: WriteGuard;
  /**
   * Proves, inside the write's transaction, that the writer still holds the grant the write needs, and locks
   * the rows that grant it (runtime/access/authorization.ts's grantWitness): a write never commits after its grant
   * went.
   */
  witness?: (sql: Sql) => Promise<void>;
  /** Subresources written whole with the record, by name (v1 writes a repo's readme with the repo). */
  subresources?: Record<string, Row>;
}

/**
 * A write's last statements, whose outcome only the commit needs: left to it where the store sends them with
 * the commit (PostgreSQL: one round trip fewer), else waited for here.
 */
async function leftToCommit(sql: Sql, statements: Promise<unknown>): Promise<void> {
  if (sql.atCommit) sql.atCommit(statements);
  else await statements;
}

/**
 * A write's first reads: the witness's grants and the record the write locks, asked for together, one round trip
 * on PostgreSQL. The witness asks for its statement before it awaits anything, so the grants are locked first, as
 * they were when it ran alone. Both are waited for, so a rollback cannot overtake either; a refusal of the witness
 * comes before what the read found, so a caller refused learns nothing of the record.
 */
async function witnessed<T>(sql: Sql, witness: WriteOptions['witness'], read: () => Promise<T>): Promise<T> {
  const proving = witness?.(sql);
  let reading: Promise<T>;
  try {
    reading = read();
  } catch (e) {
    reading = Promise.reject(e);
  }
  const [proved, found] = await Promise.allSettled([proving, reading]);
  if (proved.status === 'rejected') throw proved.reason;
  if (found.status === 'rejected') throw found.reason;
  return found.value;
}

/** A new record's uid: its parent's own (one per parent), or one `mint` makes (under its parent, or a root uid). */
export function uidFor(r: ResourceModel, parent: string | undefined, mint = newUid): string {
  return r.uid === 'parent' ? parent! : mint(parent);
}

/**
 * Immutable fields keep their value; required fields keep one. A change that leaves a required field as it was
 * passes: a row stored before the field was required may lack it (runtime/storage/stored-rows.ts), and a
 * change of another field must not fail for it.
 */
function checkUpdatable(r: ResourceModel, next: Row, current: Row, masked: string[]): void {
  for (const name of masked) {
    const f = r.fields[name];
    const guarded = f.immutable || (f.required && !f.outputOnly);
    // Compared as JSON only where a change matters: every field of every update was two serialisations.
    if (!guarded || JSON.stringify(next[name]) === JSON.stringify(current[name])) continue;
    if (f.immutable) {
      throw invalidArgument([{ field: name, description: `${name} cannot be changed after create` }]);
    }
    if (f.required && !f.outputOnly && (next[name] === undefined || next[name] === '')) {
      throw invalidArgument([{ field: name, description: `${name} is required` }]);
    }
  }
}

/**
 * Only the columns that change: SQLite rewrites the index entries of every column an UPDATE sets. Of the fields
 * the mask names: the others keep their values (applyFieldMask copies them).
 */
function changedColumns(row: Row, next: Row, masked: string[]): Row {
  const changes: Row = { updateTime: now() };
  for (const name of masked) {
    const value = next[name] ?? null;
    const before = row[name] ?? null;
    // Lists and objects compared as their JSON; a plain value as itself, without making text of it.
    const same =
      typeof value === 'object' || typeof before === 'object'
        ? JSON.stringify(value) === JSON.stringify(before)
        : value === before;
    if (!same) changes[name] = value;
  }
  return changes;
}

/** A value compared as stored. */
const scalar = (value: unknown) => value as Value;

export class Resources {
  /** Records the spec declares (built-in roles): listed and read, never changed through the API. */
  private readonly managed: Set<string>;
  private readonly tables = new Map<string, Table>();
  /**
   * Bumped by every committed write that can change who may do what (runtime/resources/grant-changes.ts), here or
   * in another process, and when notifications from other processes may have been missed.
   */
  accessVersion = 0;

  /**
   * wholeListMax: the most records a list without paging (v1's) answers; past it the list is refused rather
   * than read whole or cut short without a word.
   */
  constructor(
    private readonly store: Store,
    readonly model: ApiModel,
    readonly pageTokens: PageToken,
    /** seals credential fields before they are stored */
    readonly secrets: SecretSeal,
    private readonly wholeListMax = defaultWholeListMax,
  ) {
    this.managed = new Set(model.roles.map((r) => r.uid));
    store.accessChanges?.subscribe(() => this.accessVersion++);
  }

  /**
   * Seals the credentials a database from before sealing holds in plain text: run at each start, a row at a
   * time in its own write (values already sealed are left alone, so a second run changes nothing).
   */
  async sealStoredSecrets(): Promise<number> {
    let sealed = 0;
    for (const r of Object.values(this.model.resources)) {
      const holders = Object.fromEntries(Object.entries(r.fields).filter(([, f]) => holdsSecret(f)));
      if (Object.keys(holders).length === 0) continue;
      const table = this.table(r.type);
      const batch = 500;
      for (let offset = 0; ; offset += batch) {
        const rows = await table.find(everything(), [{ property: 'uid', desc: false }], batch, offset);
        for (const row of rows) {
          const stored = Object.fromEntries(Object.keys(holders).map((k) => [k, row[k]]));
          const changes = this.secrets.sealFields(stored, holders, true);
          if (JSON.stringify(changes) === JSON.stringify(stored)) continue;
          await this.store.transaction((sql) => table.update(sql, row.uid as string, changes));
          sealed++;
        }
        if (rows.length < batch) break;
      }
    }
    return sealed;
  }

  /** The resource stored as this entity, if one is. */
  private resourceOf(entity: string): ResourceModel | undefined {
    return Object.values(this.model.resources).find((r) => r.type === entity);
  }

  /** One entity's table, for statements of our own (hand-written handlers use it too). */
  table(entity: string): Table {
    let table = this.tables.get(entity);
    if (!table) this.tables.set(entity, (table = new Table(this.store, entity, this.resourceOf(entity))));
    return table;
  }

  /** The table of every resource of the model. */
  everyTable(): Table[] {
    return Object.values(this.model.resources).map((r) => this.table(r.type));
  }

  /**
   * A collection's table, of the record type generated for it (generated/types.ts fills RecordTypes): a wrong
   * collection name or field is a compile error in hand-written handlers.
   */
  tableOf<C extends keyof RecordTypes & string>(collection: C): Table<RecordTypes[C]> {
    // The one place a row becomes a typed record: the generated type describes the table the ORM made from the same model.
    return this.table(this.model.resources[collection].type) as Table<RecordTypes[C]>;
  }

  /** Reads of one collection that answer its generated resource type: a wrong collection or field does not compile. */
  readsOf<C extends keyof ResourceTypes & string>(collection: C) {
    const r = this.model.resources[collection];
    // The one place an answer becomes typed: the generated type describes what toResource makes of the same model.
    return {
      list: async (req: ListRequest, scope: Condition[] = []) =>
        (await this.list(r, req, scope)) as ListResult<ResourceTypes[C]>,
      listAll: async (req: ListRequest, scope: Condition[] = []) =>
        (await this.listAll(r, req, scope)) as ResourceTypes[C][],
      get: async (uid: string) => (await this.get(r, uid)) as ResourceTypes[C],
    };
  }

  /** The store's change mark over these entities' tables (runtime/storage/store.ts), where it keeps one. */
  changeMark(entities: string[]): (() => number) | undefined {
    const { store } = this;
    return store.changeMark?.(entities.map((e) => store.orm.getMetadata().find(e)!.tableName));
  }

  /** Notes a committed write to r (an update's: of these fields), for caches of access decisions. */
  noteWrite(r: ResourceModel, kind: WriteKind, fields?: Iterable<string>): void {
    if (changesGrants(r, kind, fields)) {
      this.accessVersion++;
      this.store.accessChanges?.announce();
    }
  }

  /** A hand-written write: fn's statements in one transaction, with the declared event; caches told after the commit. */
  async write<T>(declared: DeclaredEvent, fn: (writes: Writes) => Promise<T>): Promise<T> {
    let writes: Writes | undefined;
    // A hand-written write's checks are its own, over any rows the runtime cannot know to lock (a handler reads
    // through Writes, which locks nothing): SERIALIZABLE, so that none is stale at the commit.
    const result = await this.store.transaction((sql) => fn((writes = new Writes(sql, this, declared))), {
      serializable: true,
    });
    for (const { r, kind, fields } of writes!.written) this.noteWrite(r, kind, fields);
    return result;
  }

  /** The event outbox, for the delivery worker (runtime/events/). */
  outbox(): Table<OutboxEvent> {
    return this.table(outboxEntity.meta.className) as unknown as Table<OutboxEvent>;
  }

  /** Statements of the runtime's own bookkeeping (event deliveries) in one transaction, with no event of their own. */
  transaction<T>(fn: (sql: Sql) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.store.transaction(fn, options);
  }

  /** Records an event in the outbox, in the caller's transaction: stored if and only if the change is. */
  recordEvent(sql: Sql, e: NewEvent): Promise<void> {
    return this.outbox().insert(sql, outboxRow(e));
  }

  /** Records the operation's declared event, if it declares one. */
  private event(
    sql: Sql,
    r: ResourceModel,
    type: string | undefined,
    uid: string,
    body: Row,
    actor: string | undefined,
  ): Promise<void> | undefined {
    if (!type) return undefined;
    const shown = r.eventFields ? Object.fromEntries(r.eventFields.map((f) => [f, body[f]])) : body;
    return this.recordEvent(sql, {
      type,
      subject: uid,
      groupUid: groupOf(this.model, r, uid),
      actor: actor ?? null,
      body: shown,
    });
  }

  private refuseManaged(r: ResourceModel, uid: string): void {
    if (this.managed.has(uid)) {
      throw failedPrecondition([
        {
          type: 'MANAGED_RESOURCE',
          subject: uid,
          description: `built-in ${r.type.toLowerCase()} ${uid} cannot be changed or deleted`,
        },
      ]);
    }
  }

  /**
   * Lists rows; `scope` adds conditions the caller cannot see past (a nested list's parent, visibility), and
   * `counting` says the same for the per-scope counts, which give totalCount where the list is a scope.
   */
  async list(r: ResourceModel, req: ListRequest, scope: Condition[] = [], counting?: ListScope): Promise<ListResult> {
    return this.page(r, req, scope, counting, this.answerForms(r, req.order.field).objects);
  }

  /** A page as list does, each answer as its JSON text: rendered by the database where it can. */
  async listJson(
    r: ResourceModel,
    req: ListRequest,
    scope: Condition[] = [],
    counting?: ListScope,
  ): Promise<ListResult<string>> {
    const { json, objects } = this.answerForms(r, req.order.field);
    if (json) {
      const page = await this.page(r, req, scope, counting, json);
      if (page.items.every((item) => typeof item === 'string')) return page as ListResult<string>;
      const items = await Promise.all(
        page.items.map((item) => (typeof item === 'string' ? item : this.getJsonAs(r, item.uid, objects))),
      );
      return { ...page, items };
    }
    const page = await this.page(r, req, scope, counting, objects);
    return { ...page, items: page.items.map((item) => JSON.stringify(item)) };
  }

  private page<I>(
    r: ResourceModel,
    req: ListRequest,
    scope: Condition[],
    counting: ListScope | undefined,
    form: AnswerForm<I>,
  ): Promise<ListResult<I>> {
    const { pageTokens, store } = this;
    return readPage(this.table(r.type), req, {
      collection: r.collection,
      scope,
      counting,
      form,
      pageTokens,
      slowRead: store.slowRead,
    });
  }

  /** Per resource and order, what a page or a get reads and makes of each row (runtime/tables/answer-forms.ts). */
  private readonly forms = new WeakMap<ResourceModel, Map<string, AnswerForms>>();

  private answerForms(r: ResourceModel, orderedBy: string): AnswerForms {
    let byOrder = this.forms.get(r);
    if (!byOrder) this.forms.set(r, (byOrder = new Map()));
    let found = byOrder.get(orderedBy);
    if (!found)
      byOrder.set(orderedBy, (found = answerFormsOf(this.table(r.type), r, orderedBy, this.store.dialect.json)));
    return found;
  }

  /**
   * Every record matching, in the request's order, without paging or a count: for answers that hold them all
   * (v1). More than wholeListMax is FAILED_PRECONDITION: such a list is narrowed, or read from v2, which pages.
   */
  async listAll(r: ResourceModel, req: ListRequest, scope: Condition[] = []): Promise<Row[]> {
    const where = and(...scope, ...listConditions(req));
    const rows = await this.table(r.type).find(
      where,
      listOrder(req),
      this.wholeListMax + 1,
      req.skip > 0 ? req.skip : undefined,
      this.store.slowRead,
    );
    if (rows.length > this.wholeListMax)
      throw failedPrecondition([
        {
          type: 'TOO_MANY_RESULTS',
          subject: r.collection,
          description: `more than ${this.wholeListMax} ${r.collection} match, more than this list answers at once: narrow it (uidp filters, or the list's own filters), or list them with v2, which pages`,
        },
      ]);
    return rows.map((row) => toResource(row, r));
  }

  async get(r: ResourceModel, uid: string): Promise<Row> {
    return await this.getAs(r, uid, this.answerForms(r, 'uid').objects);
  }

  /**
   * The record's answer as its JSON text, as get would answer it: rendered by the database where it can, and at
   * once where its driver answers at once.
   */
  getJson(r: ResourceModel, uid: string): string | Promise<string> {
    const { json, objects } = this.answerForms(r, 'uid');
    if (!json) return this.getJsonAs(r, uid, objects);
    const answer = this.getAs(r, uid, json);
    if (typeof answer === 'string') return answer;
    return Promise.resolve(answer).then((a) => (typeof a === 'string' ? a : this.getJsonAs(r, uid, objects)));
  }

  private getJsonAs(r: ResourceModel, uid: string, objects: AnswerForm<Row>): Promise<string> {
    return Promise.resolve(this.getAs(r, uid, objects)).then((answer) => JSON.stringify(answer));
  }

  private getAs<I>(r: ResourceModel, uid: string, form: AnswerForm<I>): I | Promise<I> {
    checkUid(uid, 'uid');
    const item = (values: unknown[] | undefined) => {
      if (!values) throw notFound(r.type, uid);
      return form.item(values);
    };
    const values = this.table(r.type).getValues(uid, form.selection);
    return values instanceof Promise ? values.then(item) : item(values);
  }

  /** Creates a record; a root record of a resource with a creatorRole binds its creator to that role in it. */
  async create(r: ResourceModel, parent: string | undefined, body: Row, options: WriteOptions = {}): Promise<Row> {
    if (parent !== undefined) checkUid(parent, 'parent');
    const result = await this.store.transaction((sql) => this.createIn(sql, r, parent, body, options));
    // A new organization binds its creator: that is an access change too.
    this.noteWrite(r.creatorRole && parent === undefined ? this.model.resources.roleBindings : r, 'create');
    return result;
  }

  /**
   * Several records under one parent in one transaction, each made as create makes one: all are made, or, when
   * one is refused, none. Answers them in the order of the bodies.
   */
  async createMany(r: ResourceModel, parent: string, bodies: Row[], options: WriteOptions = {}): Promise<Row[]> {
    checkUid(parent, 'parent');
    const result = await this.store.transaction(async (sql) => {
      const made: Row[] = [];
      for (const body of bodies) made.push(await this.createIn(sql, r, parent, body, options));
      return made;
    });
    this.noteWrite(r, 'create');
    return result;
  }

  /** One create inside the caller's transaction: every check of create, then the insert (or the upsert). */
  private async createIn(
    sql: Sql,
    r: ResourceModel,
    parent: string | undefined,
    body: Row,
    options: WriteOptions,
  ): Promise<Row> {
    const { actor, prepare, guard } = options;
    // The parent locked until the commit: a delete of it waits for this create, or this create finds it gone.
    // An upsert locks it for update: two creates of the same key under one parent take turns.
    await witnessed(sql, options.witness, async () => {
      if (parent !== undefined && r.parent)
        await this.find(this.model.resources[r.parent], parent, sql, false, r.upsertOn ? 'update' : 'keyShare');
    });
    const uid = r.uid === 'parent' ? await this.newUid(sql, r, parent) : uidFor(r, parent);
    const time = now();
    // withDefaults made the object: what follows is set on it, in this order (the insert's columns).
    let data = withDefaults(this.secrets.sealFields(inputObject(body, r.fields), r.fields), r.fields, time);
    data.uid = uid;
    data.parentUid = parent ?? null;
    data.createTime = time;
    data.updateTime = time;
    for (const [name, f] of fieldList(r.fields)) if (f.setToCreator) data[name] = actor ?? null;
    Object.assign(data, this.subresourceColumns(r, options.subresources));
    let reveal: Row = {};
    if (prepare) ({ record: data, reveal = {} } = await prepare(data, new Writes(sql, this, {})));
    checkExclusive(r, data);
    // Each step awaited only when it has something to do: a create runs for every resource, most need few.
    const checked = checkReferences(this, sql, r, data);
    if (checked) await checked;
    const existing = r.upsertOn ? await this.sameUpsertKey(sql, r, data) : undefined;
    if (existing) return this.replace(sql, r, existing, data, options);
    if (!this.indexAlone(r, data)) await refuseTakenKey(this, sql, r, data);
    if (guard) await guard(sql, data);
    const created = await this.insertNew(sql, r, data, actor);
    return prepare ? { ...created, ...reveal } : created;
  }

  /** A `uid: parent` record's uid (its parent's), refused when its parent already has the one record it allows. */
  private async newUid(sql: Sql, r: ResourceModel, parent: string | undefined): Promise<string> {
    if (await this.table(r.type).get(parent!, sql))
      throw new ApiError('ALREADY_EXISTS', `Already exists: ${r.type} ${parent}`);
    return parent!;
  }

  /** The record under the same parent with the same upsertOn value, which a create replaces. */
  private async sameUpsertKey(sql: Sql, r: ResourceModel, data: Row): Promise<Row | undefined> {
    if (!r.upsertOn || data[r.upsertOn] === undefined) return undefined;
    const [existing] = await this.table(r.type).find(
      and(equal('parentUid', scalar(data.parentUid ?? null)), equal(r.upsertOn, scalar(data[r.upsertOn]))),
      [{ property: 'uid', desc: false }],
      1,
      0,
      sql,
    );
    return existing;
  }

  /**
   * Whether a create's natural key is left to its unique index alone (refuseTwin): on PostgreSQL, where the
   * insert's unique violation is the same ALREADY_EXISTS, and reading the key first costs a round trip (and in
   * a SERIALIZABLE transaction would make every concurrent create under the same parent, writing into the same
   * index page, a serialization failure). Not where a part of the key is null: the index holds nulls as distinct.
   */
  private indexAlone(r: ResourceModel, data: Row): boolean {
    if (this.store.dialect.name !== 'postgresql') return false;
    const key = naturalKeyValues(r, data);
    return key !== undefined && Object.values(key).every((v) => v !== null);
  }

  private async replace(
    sql: Sql,
    r: ResourceModel,
    existing: Row,
    data: Row,
    { actor, guard }: WriteOptions,
  ): Promise<Row> {
    const changes: Row = { updateTime: data.createTime };
    for (const name of Object.keys(r.fields)) changes[name] = data[name] ?? null;
    await guard?.(sql, { ...existing, ...changes }, existing);
    await this.table(r.type).update(sql, existing.uid as string, changes);
    const replaced = toResource({ ...existing, ...changes }, r);
    await this.event(sql, r, operationOf(r, 'create')?.event, existing.uid as string, replaced, actor);
    return replaced;
  }

  /** Inserts a new record, with its event, and a root record's creator binding when the resource declares one. */
  private async insertNew(sql: Sql, r: ResourceModel, data: Row, creator: string | undefined): Promise<Row> {
    const role =
      r.creatorRole && data.parentUid === null && creator
        ? this.model.roles.find((x) => x.name === r.creatorRole)
        : undefined;
    const created = toResource(data, r);
    const uid = data.uid as string;
    await leftToCommit(
      sql,
      refuseTwin(r, data, () =>
        together([
          this.table(r.type).insert(sql, data),
          role
            ? this.table(this.model.resources.roleBindings.type).insert(sql, {
                uid: newChildUid(uid),
                parentUid: uid,
                identityUid: creator,
                roleUid: role.uid,
                createTime: data.createTime,
                updateTime: data.createTime,
              })
            : undefined,
          this.event(sql, r, operationOf(r, 'create')?.event, uid, created, creator),
        ]),
      ),
    );
    return created;
  }

  /**
   * Updates the fields the mask names. `body` may be a function of the current record, run in the same
   * transaction: a read-modify-write (append to a list field) that loses no concurrent write.
   */
  async update(
    r: ResourceModel,
    uid: string,
    body: Row | ((current: Row) => Row),
    rawMask: string | undefined,
    options: WriteOptions = {},
  ): Promise<Row> {
    const { actor, guard } = options;
    let changed: string[] = [];
    const result = await this.store.transaction(async (sql) => {
      const row = await witnessed(sql, options.witness, () => this.find(r, uid, sql, false, 'update'));
      this.refuseManaged(r, uid);
      const given = typeof body === 'function' ? body(toResource(row, r)) : body;
      const mask = parseFieldMask(rawMask, given, r.fields);
      const input = this.secrets.sealFields(inputObject(given, r.fields), r.fields);
      const current = Object.fromEntries(
        Object.keys(r.fields)
          .map((k) => [k, row[k]])
          .filter(([, v]) => v !== null && v !== undefined),
      );
      const next = applyFieldMask(current, input, mask, r.fields);
      const masked = maskedFields(mask, r.fields);
      checkUpdatable(r, next, current, masked);
      checkExclusive(r, next);
      const checked = checkReferences(this, sql, r, Object.assign({}, next, { uid }));
      if (checked) await checked;
      const changes = { ...changedColumns(row, next, masked), ...this.subresourceColumns(r, options.subresources) };
      changed = Object.keys(changes);
      // A new name (or other part of the natural key) another record has is ALREADY_EXISTS, as at create.
      const renamed = r.naturalKey?.some((k) => k !== 'parent' && k in changes) ? { ...row, ...changes } : undefined;
      if (renamed) await refuseTakenKey(this, sql, r, renamed);
      await guard?.(sql, { ...row, ...changes }, row);
      const updated = toResource({ ...row, ...changes }, r);
      const write = () => this.table(r.type).update(sql, uid, changes);
      await leftToCommit(
        sql,
        together([
          renamed ? refuseTwin(r, renamed, write) : write(),
          this.event(sql, r, operationOf(r, 'update')?.event, uid, updated, actor),
        ]),
      );
      return updated;
    });
    this.noteWrite(r, 'update', changed);
    return result;
  }

  async delete(r: ResourceModel, uid: string, actor?: string, witness?: WriteOptions['witness']): Promise<void> {
    await this.store.transaction(async (sql) => {
      // Locked for update: creates under it that locked it first commit before, and are counted as children.
      await witnessed(sql, witness, () => this.find(r, uid, sql, false, 'update'));
      this.refuseManaged(r, uid);
      await this.deleteIn(sql, r, uid, actor);
    });
    this.noteWrite(r, 'delete');
  }

  /**
   * Records by uid in one transaction, each deleted as delete deletes one (its children, its event); a uid with
   * no record is skipped. Answers the records deleted, as the API shows them.
   */
  async deleteMany(r: ResourceModel, uids: string[], actor?: string): Promise<Row[]> {
    const deleted = await this.store.transaction(async (sql) => {
      const gone: Row[] = [];
      for (const uid of uids) {
        const row = await this.table(r.type).get(uid, sql, 'update');
        if (!row) continue;
        this.refuseManaged(r, uid);
        await this.deleteIn(sql, r, uid, actor);
        gone.push(toResource(row as Row, r));
      }
      return gone;
    });
    this.noteWrite(r, 'delete');
    return deleted;
  }

  /** A subresource of each of these records, as getSubresource answers it, by uid; one read. */
  async subresourcesOf(r: ResourceModel, name: string, uids: string[]): Promise<Map<string, Row>> {
    const s = r.subresources.find((x) => x.name === name)!;
    const stored = uids.length === 0 ? new Map() : await this.table(r.type).subresourceOf(name, uids);
    return new Map(uids.map((uid) => [uid, { uid, ...outputObject((stored.get(uid) ?? {}) as Row, s.fields) }]));
  }

  /** The columns of subresources written whole with their record: their input fields, secrets sealed. */
  private subresourceColumns(r: ResourceModel, given: Record<string, Row> = {}): Row {
    const columns: Row = {};
    for (const [name, body] of Object.entries(given)) {
      const s = r.subresources.find((x) => x.name === name)!;
      columns[`subresource_${name}`] = this.secrets.sealFields(inputObject(body, s.fields), s.fields);
    }
    return columns;
  }

  async getSubresource(r: ResourceModel, name: string, uid: string): Promise<Row> {
    const s = r.subresources.find((x) => x.name === name)!;
    const row = await this.find(r, uid, undefined, true);
    return { uid, ...outputObject((row[`subresource_${name}`] ?? {}) as Row, s.fields) };
  }

  async updateSubresource(
    r: ResourceModel,
    name: string,
    uid: string,
    body: Row,
    rawMask: string | undefined,
    actor?: string,
  ): Promise<Row> {
    const s = r.subresources.find((x) => x.name === name)!;
    const mask = parseFieldMask(rawMask, body, s.fields);
    return this.store.transaction(async (sql) => {
      const row = await this.find(r, uid, sql, true, 'update');
      const next = applyFieldMask(
        (row[`subresource_${name}`] ?? {}) as Row,
        this.secrets.sealFields(inputObject(body, s.fields), s.fields),
        mask,
        s.fields,
      );
      await this.table(r.type).update(sql, uid, { [`subresource_${name}`]: next, updateTime: now() });
      const updated = { uid, ...outputObject(next, s.fields) };
      await this.event(sql, r, s.update?.event, uid, updated, actor);
      return updated;
    });
  }

  /**
   * The stored row (NOT_FOUND if there is none), with its sub-resources when `whole`: in the caller's
   * transaction when given one.
   */
  private async find(r: ResourceModel, uid: string, sql?: Sql, whole = false, lock?: RowLock): Promise<Row> {
    checkUid(uid, 'uid');
    const table = this.table(r.type);
    const row = await (whole ? table.getWhole(uid, sql, lock) : table.get(uid, sql, lock));
    if (!row) throw notFound(r.type, uid);
    return row;
  }

  /** The record's delete in the caller's transaction: its children as the model says, then its event. */
  private async deleteIn(sql: Sql, r: ResourceModel, uid: string, actor: string | undefined): Promise<void> {
    const deleted = async (what: ResourceModel, gone: string) =>
      this.event(sql, what, operationOf(what, 'delete')?.event, gone, { uid: gone }, actor);
    await deleteWithChildren(this, sql, r, uid, deleted);
    await deleted(r, uid);
  }
}
