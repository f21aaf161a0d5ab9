// The one implementation of list, get, create, update and delete, shared by every resource of the model.
import {
  ApiError,
  failedPrecondition,
  invalidArgument,
  notFound,
  type PreconditionViolation,
} from '../model/errors.js';
import { applyFieldMask, parseFieldMask } from '../model/field-mask.js';
import type { ListRequest } from '../lists/list-request.js';
import { operationOf, type ApiModel, type ResourceModel } from '../model/api-model.js';
import { PageToken, type Cursor } from '../lists/page-token.js';
import {
  inputObject,
  now,
  outputObject,
  resourceProperties,
  toResource,
  withDefaults,
  type RecordTypes,
  type ResourceTypes,
  type Row,
} from '../model/records.js';
import { groupOf, outboxEntity, outboxRow, type NewEvent, type OutboxEvent } from '../storage/outbox.js';
import { Writes, type DeclaredEvent } from './writes.js';
import { changesGrants, type WriteKind } from './grant-changes.js';
import { together, type Sql } from '../storage/sql.js';
import {
  and,
  contains,
  equal,
  everything,
  isNull,
  notNull,
  oneOf,
  or,
  range,
  type Condition,
  type Value,
} from '../tables/condition.js';
import type { Store, TransactionOptions } from '../storage/store.js';
import type { RowLock } from '../storage/dialect.js';
import { alreadyExists } from '../storage/natural-keys.js';
import { isDuplicateKey } from '../storage/duplicate-key.js';
import { Table, type Order, type Selection } from '../tables/table.js';
import { compileAnswerShape } from '../tables/answer-shape.js';
import { answerJsonSql } from '../tables/answer-json.js';
import { ancestorsOf, descendantRange, isUidPath, newChildUid, newUid, within } from '../model/uid.js';
import { scopeTotal, type ListScope } from '../lists/total-count.js';
import { holdsSecret, type SecretSeal } from '../storage/secret-seal.js';

/** The most records a list without paging answers, unless configured (V1_LIST_MAX). */
export const defaultWholeListMax = 5000;

/** A check run inside a write's transaction, on the record as it will be stored (and as it was, for an update). */
export type WriteGuard = (sql: Sql, next: Row, current?: Row) => Promise<void>;

/** Who writes, and the steps a create or update runs in its transaction. */
export interface WriteOptions {
  /** the identity making the change, recorded with its event */
  actor?: string;
  /** a hand-written create step: completes the record; reveal adds fields to the create response only */
  prepare?: (record: Row, transaction: Writes) => Promise<{ record: Row; reveal?: Row }>;
  /** checks the record as it will be stored (no escalation) */
  guard?: WriteGuard;
  /**
   * Proves, inside the write's transaction, that the writer still holds the grant the write needs, and locks
   * the rows that grant it (runtime/access/authorization.ts's grantWitness): a write never commits after its grant
   * went.
   */
  witness?: (sql: Sql) => Promise<void>;
}

/**
 * A write's checks that span rows no row lock covers (who may grant what, a hand-written step's own reads, a
 * quota) are run SERIALIZABLE; the others lock the rows they read.
 */
function isolationOf({ guard, prepare }: WriteOptions): TransactionOptions {
  return { serializable: guard !== undefined || prepare !== undefined };
}

/** What a read selects, and what it makes of each row's values. */
interface AnswerForm<I> {
  selection: Selection;
  item: (values: unknown[]) => I;
}

/** A row whose answer the database left to JavaScript (runtime/tables/answer-json.ts): read again as objects. */
interface Unrendered {
  uid: string;
}

/** A resource's answers as objects, and as JSON text where the database renders them. */
interface AnswerForms {
  objects: AnswerForm<Row>;
  json?: AnswerForm<string | Unrendered>;
}

export interface ListResult<T = Row> {
  items: T[];
  nextPageToken: string;
  totalCount: string;
  skipped: number;
}

export function checkUid(uid: string, field: string): void {
  if (!isUidPath(uid))
    throw invalidArgument([
      { field, description: `"${uid}" is not a uid (40 hex characters, then /16 hex per level)` },
    ]);
}

function hierarchyWhere(req: ListRequest): Condition[] {
  const h = req.hierarchy;
  const where: Condition[] = [];
  if (h.descendantsOf) {
    checkUid(h.descendantsOf, 'uidp.descendants_of');
    where.push(range('uid', descendantRange(h.descendantsOf)));
  }
  if (h.childrenOf) {
    checkUid(h.childrenOf, 'uidp.children_of');
    where.push(equal('parentUid', h.childrenOf));
  }
  if (h.ancestorsOf) {
    checkUid(h.ancestorsOf, 'uidp.ancestors_of');
    where.push(oneOf('uid', ancestorsOf(h.ancestorsOf)));
  }
  if (h.inRoot) where.push(isNull('parentUid'));
  if (h.ids) where.push(oneOf('uid', h.ids));
  return where;
}

/** A filter's value, as validated against its field's schema: scalars, or a list of them for anyOf. */
const scalar = (value: unknown) => value as Value;

function filterWhere(req: ListRequest): Condition[] {
  return req.filters.map(({ filter, value }) => {
    const property = filter.field === 'parent' ? 'parentUid' : filter.field!;
    switch (filter.match) {
      case 'exact':
        return equal(property, scalar(value));
      case 'anyOf':
        return oneOf(property, value as Value[]);
      case 'contains':
        return contains(property, String(value));
      case 'atLeast':
        return range(property, { gte: scalar(value) });
      case 'atMost':
        return range(property, { lte: scalar(value) });
      case 'set': {
        const field = filter.fields![String(value)];
        return field ? notNull(field) : everything();
      }
    }
  });
}

/** Rows strictly after the cursor in (field, uid) order; SQLite puts NULLs first ascending, last descending. */
function afterCursor(field: string, desc: boolean, c: Cursor): Condition {
  const beyond = (property: string, value: Value) => range(property, desc ? { lt: value } : { gt: value });
  if (field === 'uid') return beyond('uid', c.uid);
  if (c.key === null) {
    return desc
      ? and(isNull(field), range('uid', { lt: c.uid }))
      : or(notNull(field), and(isNull(field), range('uid', { gt: c.uid })));
  }
  const tie = and(equal(field, c.key), beyond('uid', c.uid));
  return desc ? or(range(field, { lt: c.key }), isNull(field), tie) : or(beyond(field, c.key), tie);
}

/** The request's order, with uid breaking ties. */
function sortOrder(req: ListRequest): Order[] {
  const { field, desc } = req.order;
  return field === 'uid'
    ? [{ property: 'uid', desc }]
    : [
        { property: field, desc },
        { property: 'uid', desc },
      ];
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
function checkUpdatable(r: ResourceModel, next: Row, current: Row): void {
  for (const [name, f] of Object.entries(r.fields)) {
    const changed = JSON.stringify(next[name]) !== JSON.stringify(current[name]);
    if (f.immutable && changed) {
      throw invalidArgument([{ field: name, description: `${name} cannot be changed after create` }]);
    }
    if (f.required && !f.outputOnly && changed && (next[name] === undefined || next[name] === '')) {
      throw invalidArgument([{ field: name, description: `${name} is required` }]);
    }
  }
}

/** Only the columns that change: SQLite rewrites the index entries of every column an UPDATE sets. */
function changedColumns(r: ResourceModel, row: Row, next: Row): Row {
  const changes: Row = { updateTime: now() };
  for (const name of Object.keys(r.fields)) {
    const value = next[name] ?? null;
    if (JSON.stringify(value) !== JSON.stringify(row[name] ?? null)) changes[name] = value;
  }
  return changes;
}

/** The natural key's properties and this record's values of them; undefined for a resource without one. */
function naturalKeyValues(r: ResourceModel, data: Row): Row | undefined {
  if (!r.naturalKey || r.upsertOn) return undefined;
  return Object.fromEntries(
    r.naturalKey.map((k) => (k === 'parent' ? ['parentUid', data.parentUid ?? null] : [k, data[k] ?? null])),
  );
}

/** A key as the API names it: parent, not parentUid. */
const shownKey = (key: Row) =>
  Object.fromEntries(Object.entries(key).map(([k, v]) => [k === 'parentUid' ? 'parent' : k, v]));

/** The insert's unique-key violation (a twin committed meanwhile by another writer) as ALREADY_EXISTS. */
async function refuseTwin(r: ResourceModel, data: Row, insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (e) {
    const key = naturalKeyValues(r, data);
    if (key && isDuplicateKey(e)) throw alreadyExists(r.type, shownKey(key));
    throw e;
  }
}

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

  /** One entity's table, for statements of our own (hand-written handlers use it too). */
  table(entity: string): Table {
    let table = this.tables.get(entity);
    if (!table) this.tables.set(entity, (table = new Table(this.store, entity)));
    return table;
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
    // A hand-written write's checks are its own, over any rows: SERIALIZABLE, so that none is stale at the commit.
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
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.store.transaction(fn);
  }

  /** Records an event in the outbox, in the caller's transaction: stored if and only if the change is. */
  async recordEvent(sql: Sql, e: NewEvent): Promise<void> {
    await this.table(outboxEntity.meta.className).insert(sql, { ...outboxRow(e) });
  }

  /** Records the operation's declared event, if it declares one. */
  private async event(
    sql: Sql,
    r: ResourceModel,
    type: string | undefined,
    uid: string,
    body: Row,
    actor: string | undefined,
  ): Promise<void> {
    if (!type) return;
    const shown = r.eventFields ? Object.fromEntries(r.eventFields.map((f) => [f, body[f]])) : body;
    await this.recordEvent(sql, {
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

  /** At most one field of each exclusive group may be set. */
  private checkExclusive(r: ResourceModel, data: Row): void {
    for (const group of r.exclusive) {
      const set = group.filter((f) => data[f] !== undefined && data[f] !== null);
      if (set.length > 1)
        throw invalidArgument(
          set.map((f) => ({ field: f, description: `${f}: only one of ${group.join(', ')} may be set` })),
        );
    }
  }

  /**
   * Fields that name another record must name one that exists; an `inScope` reference must name a record of
   * this record's group or of a group above it (an identity made under a subgroup is not bound above it).
   */
  private async checkReferences(sql: Sql, r: ResourceModel, data: Row): Promise<void> {
    for (const [name, f] of Object.entries(r.fields)) {
      if (!f.references || data[name] === undefined || data[name] === null) continue;
      const target = this.model.resources[f.references];
      const uid = String(data[name]);
      const missing = () =>
        invalidArgument([{ field: name, description: `${name}: no ${target.type.toLowerCase()} ${uid}` }]);
      if (!isUidPath(uid)) throw missing();
      // Where a record lives is in its uid: out of scope is said before any lookup, so the answer does not tell
      // whether a record exists in a group the caller cannot see.
      const home = f.inScope ? groupOf(this.model, target, uid) : null;
      const group = groupOf(this.model, r, data.uid as string);
      if (home !== null && group !== null && !within(group, home)) {
        throw invalidArgument([
          {
            field: name,
            description: `${name}: ${uid} is not a ${target.type.toLowerCase()} of ${group} or of a group above it`,
          },
        ]);
      }
      // A grant's scope lies in this record's group: said before the lookup too, so another tenant's group is
      // refused as one that does not exist is not.
      if (f.grantScope && group !== null && !within(uid, group))
        throw invalidArgument([
          { field: name, description: `${name} must be the uid of ${group} or of a group below it` },
        ]);
      // Locked: the record named cannot be deleted before this write commits.
      if (!(await this.table(target.type).get(uid, sql, 'keyShare'))) throw missing();
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

  private async page<I>(
    r: ResourceModel,
    req: ListRequest,
    scope: Condition[],
    counting: ListScope | undefined,
    form: AnswerForm<I>,
  ): Promise<ListResult<I>> {
    const base: Condition[] = [...scope, ...hierarchyWhere(req), ...filterWhere(req)];
    const digest = PageToken.queryDigest({
      resource: r.collection,
      order: `${req.order.field} ${req.order.desc ? 'desc' : 'asc'}`,
      hierarchy: req.hierarchy,
      filters: req.filters.map((f) => [f.filter.param, f.value]),
      scope: JSON.stringify(scope),
    });
    let cursor: Cursor | undefined;
    if (req.pageToken) {
      const read = this.pageTokens.read(req.pageToken, digest);
      if (read.status === 'invalid')
        throw invalidArgument([{ field: 'page_token', description: `invalid page token: ${read.reason}` }]);
      if (read.status === 'valid') cursor = read.cursor;
    }
    const { field, desc } = req.order;
    const where = and(...base, ...(cursor ? [afterCursor(field, desc, cursor)] : []));
    const table = this.table(r.type);
    // A filter the order's index does not serve, or a long skip, may read a large range: off the main thread.
    const reader = req.filters.length > 0 || req.skip >= 1000 ? this.store.slowRead : undefined;
    const rows = await table.findValues(
      where,
      sortOrder(req),
      req.pageSize + 1,
      req.skip > 0 ? req.skip : undefined,
      reader,
      form.selection,
    );
    const total = (counting && (await scopeTotal(table, req, counting))) ?? (await table.count(and(...base)));
    const page = rows.slice(0, req.pageSize);
    const last = page.length > 0 ? table.recordOf(page[page.length - 1], form.selection) : undefined;
    const more = rows.length > req.pageSize;
    return {
      items: page.map(form.item),
      nextPageToken:
        more && last
          ? this.pageTokens.issue(digest, { key: (last[field] ?? null) as Cursor['key'], uid: last.uid as string })
          : '',
      totalCount: String(total),
      skipped: req.skip,
    };
  }

  /**
   * Per resource and order, what a page or a get reads and makes of each row: the columns of an answer and of
   * a list's page token, no more, shaped into the answer (a get reads them as a list by uid would); and, where
   * the database renders the answer (runtime/tables/answer-json.ts), the page token's columns and the answer's text.
   */
  private readonly forms = new WeakMap<ResourceModel, Map<string, AnswerForms>>();

  private answerForms(r: ResourceModel, orderedBy: string): AnswerForms {
    let byOrder = this.forms.get(r);
    if (!byOrder) this.forms.set(r, (byOrder = new Map()));
    let found = byOrder.get(orderedBy);
    if (!found) {
      const table = this.table(r.type);
      const selection = table.selection([...resourceProperties(r), orderedBy]);
      const json = this.store.dialect.json;
      const rendered = json && answerJsonSql(json, r, table.selection(resourceProperties(r)).columns);
      const keys = table.selection(['uid', orderedBy], rendered);
      const uidAt = keys.columns.findIndex(([property]) => property === 'uid');
      found = {
        objects: { selection, item: compileAnswerShape(r, selection.columns) },
        json: rendered
          ? {
              selection: keys,
              item: (values) => (values[keys.columns.length] as string | null) ?? { uid: values[uidAt] as string },
            }
          : undefined,
      };
      byOrder.set(orderedBy, found);
    }
    return found;
  }

  /**
   * Every record matching, in the request's order, without paging or a count: for answers that hold them all
   * (v1). More than wholeListMax is FAILED_PRECONDITION: such a list is narrowed, or read from v2, which pages.
   */
  async listAll(r: ResourceModel, req: ListRequest, scope: Condition[] = []): Promise<Row[]> {
    const where = and(...scope, ...hierarchyWhere(req), ...filterWhere(req));
    const rows = await this.table(r.type).find(
      where,
      sortOrder(req),
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
    const result = await this.store.transaction(
      (sql) => this.createIn(sql, r, parent, body, options),
      isolationOf(options),
    );
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
    }, isolationOf(options));
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
    await options.witness?.(sql);
    // The parent locked until the commit: a delete of it waits for this create, or this create finds it gone.
    // An upsert locks it for update: two creates of the same key under one parent take turns.
    if (parent !== undefined && r.parent)
      await this.find(this.model.resources[r.parent], parent, sql, false, r.upsertOn ? 'update' : 'keyShare');
    const uid = await this.newUid(sql, r, parent);
    const time = now();
    let data: Row = {
      ...withDefaults(this.secrets.sealFields(inputObject(body, r.fields), r.fields), r.fields, time),
      uid,
      parentUid: parent ?? null,
      createTime: time,
      updateTime: time,
    };
    for (const [name, f] of Object.entries(r.fields)) if (f.setToCreator) data[name] = actor ?? null;
    let reveal: Row = {};
    if (prepare) ({ record: data, reveal = {} } = await prepare(data, new Writes(sql, this, {})));
    this.checkExclusive(r, data);
    await this.checkReferences(sql, r, data);
    const existing = await this.sameUpsertKey(sql, r, data);
    if (existing) return this.replace(sql, r, existing, data, options);
    if (!this.indexAlone(r, data, options)) await this.refuseTakenKey(sql, r, data);
    await guard?.(sql, data);
    return { ...(await this.insertNew(sql, r, data, actor)), ...reveal };
  }

  /** A new record's uid, refused when its parent already has the one record a `uid: parent` resource allows. */
  private async newUid(sql: Sql, r: ResourceModel, parent: string | undefined): Promise<string> {
    if (r.uid !== 'parent') return uidFor(r, parent);
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
   * ALREADY_EXISTS when another record has this one's natural key (a repo's parent and name). The key's unique
   * index refuses the twin that a concurrent create commits between this read and the insert (insertNew).
   */
  /**
   * Whether a create's natural key is left to its unique index alone (refuseTwin): in a SERIALIZABLE transaction
   * on PostgreSQL, where reading the index would make every concurrent create under the same parent (writing
   * into the same index page) a serialization failure. Not where a part of the key is null: the index holds
   * nulls as distinct.
   */
  private indexAlone(r: ResourceModel, data: Row, options: WriteOptions): boolean {
    if (this.store.dialect.name !== 'postgresql' || !isolationOf(options).serializable) return false;
    const key = naturalKeyValues(r, data);
    return key !== undefined && Object.values(key).every((v) => v !== null);
  }

  private async refuseTakenKey(sql: Sql, r: ResourceModel, data: Row): Promise<void> {
    const key = naturalKeyValues(r, data);
    if (key && (await this.table(r.type).lastWith(sql, key))) throw alreadyExists(r.type, shownKey(key));
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
    await refuseTwin(r, data, () =>
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
      await options.witness?.(sql);
      const row = await this.find(r, uid, sql, false, 'update');
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
      checkUpdatable(r, next, current);
      this.checkExclusive(r, next);
      await this.checkReferences(sql, r, { ...next, uid });
      const changes = changedColumns(r, row, next);
      changed = Object.keys(changes);
      // A new name (or other part of the natural key) another record has is ALREADY_EXISTS, as at create.
      const renamed = r.naturalKey?.some((k) => k !== 'parent' && k in changes) ? { ...row, ...changes } : undefined;
      if (renamed) await this.refuseTakenKey(sql, r, renamed);
      await guard?.(sql, { ...row, ...changes }, row);
      const updated = toResource({ ...row, ...changes }, r);
      const write = () => this.table(r.type).update(sql, uid, changes);
      await together([
        renamed ? refuseTwin(r, renamed, write) : write(),
        this.event(sql, r, operationOf(r, 'update')?.event, uid, updated, actor),
      ]);
      return updated;
    }, isolationOf(options));
    this.noteWrite(r, 'update', changed);
    return result;
  }

  async delete(r: ResourceModel, uid: string, actor?: string, witness?: WriteOptions['witness']): Promise<void> {
    await this.store.transaction(async (sql) => {
      await witness?.(sql);
      // Locked for update: creates under it that locked it first commit before, and are counted as children.
      await this.find(r, uid, sql, false, 'update');
      this.refuseManaged(r, uid);
      await this.deleteWithChildren(sql, r, uid, actor);
      await this.event(sql, r, operationOf(r, 'delete')?.event, uid, { uid }, actor);
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
        await this.deleteWithChildren(sql, r, uid, actor);
        await this.event(sql, r, operationOf(r, 'delete')?.event, uid, { uid }, actor);
        gone.push(toResource(row as Row, r));
      }
      return gone;
    });
    this.noteWrite(r, 'delete');
    return deleted;
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

  /**
   * Restricting children block the delete; cascading children go with their parent, each recording its own
   * declared delete event (a subscriber to tags hears of the tags a repo's delete took).
   */
  private async deleteWithChildren(sql: Sql, r: ResourceModel, uid: string, actor?: string): Promise<void> {
    const violations: PreconditionViolation[] = [];
    for (const childName of r.children) {
      const child = this.model.resources[childName];
      if (child.onParentDelete !== 'restrict') continue;
      const where = equal(child.uid === 'parent' ? 'uid' : 'parentUid', uid);
      if ((await this.table(child.type).count(where, sql)) > 0) {
        violations.push({
          type: 'RESOURCE_NOT_EMPTY',
          subject: uid,
          description: `cannot delete ${r.type.toLowerCase()} with child ${child.collection}`,
        });
      }
    }
    for (const other of Object.values(this.model.resources)) {
      for (const [name, f] of Object.entries(other.fields)) {
        if (f.references === r.collection && (await this.table(other.type).count(equal(name, uid), sql)) > 0) {
          violations.push({
            type: 'RESOURCE_IN_USE',
            subject: uid,
            description: `cannot delete ${r.type.toLowerCase()} still referenced by ${other.collection}`,
          });
        }
      }
    }
    if (violations.length > 0) throw failedPrecondition(violations);
    for (const childName of r.children) {
      const child = this.model.resources[childName];
      if (child.onParentDelete !== 'cascade') continue;
      const rows = await this.table(child.type).find(
        equal('parentUid', uid),
        [{ property: 'uid', desc: false }],
        -1,
        0,
        sql,
      );
      const event = operationOf(child, 'delete')?.event;
      for (const { uid: childUid } of rows as { uid: string }[]) {
        await this.deleteWithChildren(sql, child, childUid, actor);
        await this.event(sql, child, event, childUid, { uid: childUid }, actor);
      }
    }
    await this.table(r.type).delete(sql, uid);
  }
}
