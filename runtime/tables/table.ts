// One resource's table in SQL of our own, for the runtime's own reads and writes. The ORM's identity map,
// change tracking and hydration cost about 0.8 ms of CPU per findOne and more per flush, against 0.1 ms for
// the statement itself, and nothing here needs them. Rows are shaped as the ORM shapes them (property names,
// JSON parsed, booleans), from the ORM's own metadata, so the ORM still defines and migrates the tables.
import { CountCache } from '../storage/count-cache.js';
import type { Row } from '../model/records.js';
import type { FieldModel, ResourceModel } from '../model/api-model.js';
import { shapeMark, storedAsShown } from './answer-json.js';
import { CountChanges, isCounted, readCounts } from '../storage/scope-counts.js';
import type { PendingCounts, Sql } from '../storage/sql.js';
import { and, equal, oneOf, type Condition, type Value } from './condition.js';
import { quoteIdentifier, type Column, type Dialect, type RowLock } from '../storage/dialect.js';
import { ConditionCompiler } from './sql-condition.js';
import type { Store } from '../storage/store.js';

export interface Order {
  property: string;
  desc: boolean;
}

/** Some of a table's columns, and perhaps an expression after them, for find to read: made once by Table.selection. */
export interface Selection {
  readonly list: string;
  readonly columns: [string, Column][];
  /** the statement reading the selection of one row by uid */
  readonly byUid: string;
}

/** T: the record type, when the caller knows it (Resources.tableOf); the runtime's own code uses plain rows. */
export class Table<T = Row> {
  private readonly columns = new Map<string, Column>();
  private readonly table: string;
  /** every column but sub-resources (a repo's readme, up to 1 MiB): what lists and lookups read */
  private readonly findList: string;
  private readonly byUid: string;
  private readonly wholeByUid: string;
  private readonly everyColumn: [string, Column][];
  private readonly findColumns: [string, Column][];
  private readonly counts = new CountCache();
  readonly dialect: Dialect;
  private readonly conditions: ConditionCompiler;
  /** the name its per-scope counts are kept under (runtime/storage/scope-counts.ts), when they are */
  readonly counted?: string;

  /**
   * r: the resource whose records the table holds, when the runtime knows it: where the database renders answers,
   * its objects that can be are stored as they are shown (runtime/tables/answer-json.ts storedAsShown).
   */
  constructor(
    private readonly store: Store,
    private readonly entity: string,
    private readonly r?: ResourceModel,
  ) {
    const meta = store.orm.getMetadata().find(entity);
    if (!meta) throw new Error(`no entity ${entity}`);
    this.table = quoteIdentifier(meta.tableName);
    this.dialect = store.dialect;
    if (isCounted(meta)) this.counted = meta.tableName;
    for (const p of meta.props) {
      const type = p.customType?.constructor.name;
      const kind =
        type === 'JsonType' || p.type === 'json'
          ? 'json'
          : type === 'BigIntType'
            ? 'int64'
            : p.type === 'boolean'
              ? 'boolean'
              : 'plain';
      this.columns.set(p.name, { name: p.fieldNames[0], kind, notNull: p.primary || !p.nullable });
    }
    this.conditions = new ConditionCompiler(this.columns, this.dialect);
    this.everyColumn = [...this.columns];
    this.findColumns = this.everyColumn.filter(([prop]) => !prop.startsWith('subresource_'));
    const select = (props: [string, Column][]) => props.map(([, c]) => this.dialect.selected(c)).join(', ');
    this.findList = select(this.findColumns);
    this.byUid = `select ${this.findList} from ${this.table} where "uid" = ?`;
    this.wholeByUid = `select ${select(this.everyColumn)} from ${this.table} where "uid" = ?`;
  }

  /** A record from a row's values in the order of `columns`: JSON parsed, booleans as booleans. */
  private toRecord(values: unknown[], columns: [string, Column][]): T {
    const record: Row = {};
    for (let i = 0; i < columns.length; i++) {
      const [prop, c] = columns[i];
      const v = values[i];
      record[prop] =
        v === null || v === undefined
          ? v
          : c.kind === 'json' && typeof v === 'string'
            ? JSON.parse(v)
            : c.kind === 'boolean'
              ? v === 1 || v === true
              : v;
    }
    return record as T;
  }

  /**
   * The record with this uid, without its sub-resources (a repo's readme, up to 1 MiB): their own get reads them.
   * lock: in a write's transaction, the row locked until it ends (runtime/storage/dialect.ts's RowLock).
   */
  async get(uid: string, sql?: Sql, lock?: RowLock): Promise<T | null> {
    const text = lock ? this.byUid + this.dialect.lock(lock) : this.byUid;
    const [values] = await (sql ?? this.store.read).values(text, [uid]);
    return values ? this.toRecord(values, this.findColumns) : null;
  }

  /** The selection's values of the row with this uid, undefined when there is none; at once where the driver can. */
  getValues(uid: string, only: Selection): unknown[] | undefined | Promise<unknown[] | undefined> {
    const read = this.store.read;
    if (read.valuesNow) return read.valuesNow(only.byUid, [uid])[0];
    return read.values(only.byUid, [uid]).then(([values]) => values);
  }

  /** The record with this uid and its sub-resources. */
  async getWhole(uid: string, sql?: Sql, lock?: RowLock): Promise<T | null> {
    const text = lock ? this.wholeByUid + this.dialect.lock(lock) : this.wholeByUid;
    const [values] = await (sql ?? this.store.read).values(text, [uid]);
    return values ? this.toRecord(values, this.everyColumn) : null;
  }

  /** One sub-resource of each of these rows, by uid, in one statement (v1 shows a repo's readme in its lists). */
  async subresourceOf(name: string, uids: readonly string[]): Promise<Map<string, Row | undefined>> {
    const columns = this.everyColumn.filter(([prop]) => prop === 'uid' || prop === `subresource_${name}`);
    const where = this.conditions.compile(oneOf<Row>('uid', uids) as unknown as Condition<T>);
    const list = columns.map(([, c]) => this.dialect.selected(c)).join(', ');
    const rows = await this.store.read.values(`select ${list} from ${this.table} where ${where.sql}`, where.params);
    const out = new Map<string, Row | undefined>();
    for (const values of rows) {
      const record = this.toRecord(values, columns) as Row;
      out.set(record.uid as string, (record[`subresource_${name}`] ?? undefined) as Row | undefined);
    }
    return out;
  }

  /**
   * Rows matching, in order, without their sub-resources (get reads those); in the caller's transaction when
   * given one, else on the read-only connection. lock: in a write's transaction, the rows read locked until it
   * ends (`claim`: those another holds are passed by).
   */
  async find(
    where: Condition<T>,
    order: Order[],
    limit: number,
    offset?: number,
    sql?: Sql,
    lock?: RowLock,
  ): Promise<T[]> {
    const rows = await this.findValues(where, order, limit, offset, sql, undefined, lock);
    return rows.map((values) => this.toRecord(values, this.findColumns));
  }

  /** Rows matching, locked until the caller's transaction ends (runtime/storage/dialect.ts's RowLock); in no order. */
  async findLocked(sql: Sql, where: Condition<T>, lock: RowLock): Promise<T[]> {
    const compiled = this.conditions.compile(where);
    const rows = await sql.values(
      `select ${this.findList} from ${this.table} where ${compiled.sql}${this.dialect.lock(lock)}`,
      compiled.params,
    );
    return rows.map((values) => this.toRecord(values, this.findColumns));
  }

  /**
   * Rows matching, in order, as arrays of their values in the order of the selection's columns (without
   * sub-resources when none is given): for a caller that shapes rows itself (runtime/tables/answer-shape.ts).
   */
  async findValues(
    where: Condition<T>,
    order: Order[],
    limit: number,
    offset?: number,
    sql?: Sql,
    only?: Selection,
    lock?: RowLock,
  ): Promise<unknown[][]> {
    const compiled = this.conditions.compile(where);
    // Qualified: in ORDER BY a bare name would mean the select list's alias, the text of an int64 column.
    const orderBy = order
      .map((o) => {
        const c = this.columns.get(o.property)!;
        return this.dialect.orderBy(`${this.table}.${quoteIdentifier(c.name)}`, o.desc, c.notNull);
      })
      .join(', ');
    const page = this.dialect.limit(limit, offset ?? 0);
    return (sql ?? this.store.read).values(
      this.findStatement(
        only?.list ?? this.findList,
        compiled.sql,
        orderBy,
        page.sql + (lock ? this.dialect.lock(lock) : ''),
      ),
      [...compiled.params, ...page.params],
    );
  }

  /**
   * A find's statement, the same string each time for the same selection and clauses: a statement is looked up
   * by its text, and a string made anew is hashed anew (an answer rendered as JSON makes the text long).
   */
  private readonly finds = new Map<string, Map<string, string>>();
  private findsKept = 0;
  /** Conditions of many shapes (a list of n uids has n parameters) need not all be kept, nor their long texts. */
  private static readonly maxFinds = 200;

  private findStatement(list: string, where: string, orderBy: string, page: string): string {
    let bySelection = this.finds.get(list);
    if (!bySelection) this.finds.set(list, (bySelection = new Map()));
    const clauses = `where ${where} order by ${orderBy} ${page}`;
    let text = bySelection.get(clauses);
    if (text === undefined) {
      if (this.findsKept >= Table.maxFinds) {
        for (const kept of this.finds.values()) kept.clear();
        this.findsKept = 0;
      }
      bySelection.set(clauses, (text = `select ${list} from ${this.table} ${clauses}`));
      this.findsKept++;
    }
    return text;
  }

  /** The record of a row's values read by findValues with this selection. */
  recordOf(values: unknown[], only: Selection): T {
    return this.toRecord(values, only.columns);
  }

  /**
   * A selection of these properties (those the table has) for find: what a list answer shows, no more; with
   * `computed`, an expression over the row (runtime/tables/answer-json.ts) read after them, as the last value.
   */
  selection(props: readonly string[], computed?: string): Selection {
    const columns = this.findColumns.filter(([prop]) => props.includes(prop));
    const list = [...columns.map(([, c]) => this.dialect.selected(c)), ...(computed ? [computed] : [])].join(', ');
    return { list, columns, byUid: `select ${list} from ${this.table} where "uid" = ?` };
  }

  /**
   * The uid and createTime of the row whose properties have these values (null matching null), the last by uid
   * where several do: a lookup by natural key, which the table's index on that key answers.
   */
  async lastWith(sql: Sql, values: Row): Promise<{ uid: string; createTime: string } | undefined> {
    const compiled = this.conditions.compile(
      and(...Object.entries(values).map(([prop, v]) => equal(prop, (v ?? null) as Value | null))),
    );
    const [row] = await sql.all(
      `select "uid", ${quoteIdentifier(this.columns.get('createTime')!.name)} as "createTime" from ${this.table} ` +
        `where ${compiled.sql} order by "uid" desc limit 1`,
      compiled.params,
    );
    return row as { uid: string; createTime: string } | undefined;
  }

  async count(where: Condition<T>, sql?: Sql): Promise<number> {
    const compiled = this.conditions.compile(where);
    const query = `select count(*) as n from ${this.table} where ${compiled.sql}`;
    const countOn = async (q: Sql) => Number((await q.all(query, compiled.params))[0].n);
    // Only SQLite tells cheaply whether anything changed since a count (runtime/storage/count-cache.ts).
    if (sql || this.dialect.name !== 'sqlite') return countOn(sql ?? this.store.slowRead);
    // A count over conditions may read a large range: off the main thread.
    return this.counts.count(this.store.slowRead, `${compiled.sql} ${JSON.stringify(compiled.params)}`, () =>
      countOn(this.store.slowRead),
    );
  }

  private get parentColumn(): string {
    return quoteIdentifier(this.columns.get('parentUid')!.name);
  }

  /**
   * Inserts a record and counts it: now, or in `counts` when given (or the transaction's own, PostgreSQL's),
   * which the caller (the store) writes in the same transaction, once for many records.
   */
  insert(sql: Sql, record: T, counts?: PendingCounts): Promise<void> {
    const props = Object.keys(record as Row);
    // Counts gathered for the commit are noted before the insert has answered: a caller may leave its outcome
    // to the commit (Sql.atCommit), and an insert that fails fails the transaction, its counts with it.
    const gathered = this.counted ? (counts ?? sql.counts) : undefined;
    gathered?.note(
      this.counted!,
      (record as Row).uid as string,
      ((record as Row).parentUid ?? null) as string | null,
      1,
    );
    let inserted: Promise<unknown>;
    try {
      inserted = sql.run(
        this.statementOf('insert', props, () => {
          const columns = props.map((prop) => quoteIdentifier(this.columnOf(prop).name));
          return `insert into ${this.table} (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`;
        }),
        this.parameters(record as Row, props),
      );
    } catch (e) {
      return Promise.reject(e);
    }
    // The insert's own promise passed on where there is nothing to do after it: each write makes several.
    if (this.counted && !gathered) return inserted.then(() => this.countRecord(sql, record as Row, 1));
    return inserted as Promise<void>;
  }

  /** A record added or removed, in the given counts, the transaction's, or (neither) written now. */
  private async countRecord(sql: Sql, { uid, parentUid }: Row, delta: 1 | -1, counts = sql.counts): Promise<void> {
    const into = counts ?? this.countChanges()!;
    into.note(this.counted!, uid as string, (parentUid ?? null) as string | null, delta);
    if (!counts) await (into as CountChanges).write(sql);
  }

  /** Counts to change with inserts in one transaction; undefined for a table without counts. */
  countChanges(): CountChanges | undefined {
    return this.counted ? new CountChanges(this.dialect.countShards) : undefined;
  }

  /** Sets these properties of the row with this uid. */
  async update(sql: Sql, uid: string, changes: Partial<T>): Promise<void> {
    const props = Object.keys(changes);
    await sql.run(
      this.statementOf('update', props, () => `update ${this.table} set ${this.assignments(props)} where "uid" = ?`),
      [...this.parameters(changes as Row, props), uid],
    );
  }

  /** The properties whose values a write stores as shown, with their marks (runtime/tables/answer-json.ts). */
  shownObjects(): { name: string; prop: string; mark: string }[] {
    const shown: { name: string; prop: string; mark: string }[] = [];
    for (const prop of this.columns.keys()) {
      const f = this.storedField(prop);
      const mark = f && shapeMark(f);
      if (mark) shown.push({ name: `${this.entity}.${prop}`, prop, mark });
    }
    return shown;
  }

  /** The field of a JSON column, where the database renders answers and the table knows its resource. */
  private storedField(prop: string): FieldModel | undefined {
    const r = this.r;
    return this.dialect.json && r && this.columns.get(prop)?.kind === 'json' && Object.hasOwn(r.fields, prop)
      ? r.fields[prop]
      : undefined;
  }

  /** The first rowid after this one, if a row has one: where a pass over the rows as stored goes on. */
  async rowidAfter(sql: Sql, after: number): Promise<number | undefined> {
    const [[next]] = await sql.values(`select min(rowid) from ${this.table} where rowid > ?`, [after]);
    return (next ?? undefined) as number | undefined;
  }

  /** The largest rowid in use (0 when there are no rows): where a pass over the rows as stored ends. */
  async lastRowid(sql: Sql): Promise<number> {
    const [[last]] = await sql.values(`select coalesce(max(rowid), 0) from ${this.table}`);
    return last as number;
  }

  /**
   * Writes again, as a write now would, this shown object's values in the rows from rowid `after` (exclusive) to
   * `upTo` that are stored otherwise (without its mark): rows an older version, a migration or another spec
   * wrote. Resolves to how many rows it wrote.
   */
  async storeAsShown(sql: Sql, prop: string, mark: string, after: number, upTo: number): Promise<number> {
    const column = quoteIdentifier(this.columnOf(prop).name);
    const rows = await sql.values(
      `select rowid, ${column} from ${this.table} where rowid > ? and rowid <= ? and ${column} is not null ` +
        `and substr(${column}, -${mark.length}) <> ?`,
      [after, upTo, mark],
    );
    let rewritten = 0;
    for (const [rowid, stored] of rows) {
      if (typeof stored !== 'string') continue;
      let value: unknown;
      try {
        value = JSON.parse(stored);
      } catch {
        continue;
      }
      const shown = storedAsShown(this.r!.fields[prop], value);
      if (shown === undefined || shown === stored) continue;
      await sql.run(`update ${this.table} set ${column} = ? where rowid = ?`, [shown, rowid]);
      rewritten++;
    }
    return rewritten;
  }

  /** Inserts and updates by the properties they write: their text is made once per set of properties. */
  private readonly statements = new Map<string, string>();
  private static readonly maxStatements = 1000;

  private statementOf(kind: 'insert' | 'update', props: string[], make: () => string): string {
    const key = `${kind} ${props.join(' ')}`;
    let text = this.statements.get(key);
    if (text === undefined) {
      text = make();
      // Bounded: the sets of properties come from the spec's fields, but a table need not trust its callers.
      if (this.statements.size >= Table.maxStatements) this.statements.clear();
      this.statements.set(key, text);
    }
    return text;
  }

  /** `"column" = ?, ...` for these properties. */
  private assignments(props: string[]): string {
    return props.map((prop) => `${quoteIdentifier(this.columnOf(prop).name)} = ?`).join(', ');
  }

  /** The table's name as SQL text, for a statement over several tables (runtime/access/stored-grants.ts). */
  get sqlName(): string {
    return this.table;
  }

  /** A property's column name as SQL text, for a statement over several tables. */
  sqlColumn(prop: string): string {
    return quoteIdentifier(this.columnOf(prop).name);
  }

  private columnOf(prop: string): Column {
    const c = this.columns.get(prop);
    if (!c) throw new Error(`${this.entity} has no property ${prop}`);
    return c;
  }

  /** The values of these properties as their columns store them. */
  private parameters(values: Row, props: string[]): unknown[] {
    return props.map((prop) => {
      const { kind } = this.columnOf(prop);
      const f = this.storedField(prop);
      return (
        (f && storedAsShown(f, values[prop])) ??
        this.dialect.parameter(kind === 'json' ? 'storedJson' : kind, values[prop])
      );
    });
  }

  /** Sets these properties on every row matching; resolves to how many rows changed. */
  async updateWhere(sql: Sql, where: Condition<T>, changes: Partial<T>): Promise<number> {
    const props = Object.keys(changes);
    const compiled = this.conditions.compile(where);
    return sql.run(`update ${this.table} set ${this.assignments(props)} where ${compiled.sql}`, [
      ...this.parameters(changes as Row, props),
      ...compiled.params,
    ]);
  }

  /** Deletes every row matching; only for a table without per-scope counts (delete keeps those). */
  async deleteWhere(sql: Sql, where: Condition<T>): Promise<number> {
    if (this.counted) throw new Error(`${this.entity} keeps per-scope counts: delete its rows one by one`);
    const compiled = this.conditions.compile(where);
    return sql.run(`delete from ${this.table} where ${compiled.sql}`, compiled.params);
  }

  async delete(sql: Sql, uid: string): Promise<void> {
    if (!this.counted) {
      await sql.run(`delete from ${this.table} where "uid" = ?`, [uid]);
      return;
    }
    const [gone] = await sql.all(
      `delete from ${this.table} where "uid" = ? returning ${this.parentColumn} as "parentUid"`,
      [uid],
    );
    if (gone) await this.countRecord(sql, { uid, parentUid: gone.parentUid }, -1);
  }

  /** The kept counts of these scopes (absent: no record there); only for a counted table. */
  scopeCounts(scopes: string[]): Promise<Map<string, { below: number; children: number }>> {
    return readCounts(this.store.read, this.counted!, scopes, this.dialect.countShards);
  }

  /** Whether a record with this uid exists, and its parent. */
  async placeOf(uid: string): Promise<{ parentUid: string | null } | undefined> {
    const [row] = await this.store.read.all(
      `select ${this.parentColumn} as "parentUid" from ${this.table} where "uid" = ?`,
      [uid],
    );
    return row ? { parentUid: (row.parentUid ?? null) as string | null } : undefined;
  }
}
