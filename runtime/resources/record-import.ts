// An import of records into one resource (npm run import): an upsert on the resource's natural key. Every record
// is checked before any is written; the checked records wait in a scratch database (a private temporary file,
// so memory does not grow with the file, and its unique index finds a key given twice). They are then written in
// short transactions with pauses between them, so a server on the same file keeps writing meanwhile: each step
// looks the natural keys up by their index, inserts or replaces, and adds its per-scope counts once.
import Database from 'better-sqlite3';
import { ApiError, invalidArgument, notFound } from '../model/errors.js';
import type { ResourceModel } from '../model/api-model.js';
import { canonicalTimestamp, inputObject, now, type Row } from '../model/records.js';
import { checkUid } from '../model/uid.js';
import { uidFor, type Resources } from './standard-methods.js';
import type { CountChanges } from '../storage/scope-counts.js';
import type { Sql } from '../storage/sql.js';
import type { Store } from '../storage/store.js';
import type { Table } from '../tables/table.js';
import { uidRun } from '../model/uid.js';

/**
 * How long one step may hold the file's write lock, and the pause after it: longer than the longest interval at
 * which a waiting server tries again (runtime/storage/group-commit.ts), so its writes get in between the steps.
 */
const stepMs = 150;
const pauseMs = 20;
/** Records read from the scratch database at a time. */
const batchSize = 500;

interface Staged {
  n: number;
  parent: string | null;
  record: string;
  createTime: string | null;
  updateTime: string | null;
}

/** What the records of one step share: its transaction, its time, their new uids and count changes. */
interface Shared {
  sql: Sql;
  time: string;
  mint: (parent: string | undefined) => string;
  counts?: CountChanges;
}

/** A write that failed after earlier steps were committed: what they stored stays. */
export class PartialImport extends Error {
  constructor(
    readonly stored: number,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

/** An imported record's fields in stored form; a problem names the record. */
function importedFields(r: ResourceModel, data: Row, at: string): Row {
  try {
    return inputObject(data, r.fields, 'record');
  } catch (e) {
    throw e instanceof ApiError ? new ApiError(e.codeName, `${at}: ${e.message}`, e.details) : e;
  }
}

/** Every imported record carries its natural key. */
function checkNaturalKey(naturalKey: string[], record: Row, at: string): void {
  const missing = naturalKey.filter((k) => k !== 'parent' && record[k] === undefined);
  if (missing.length > 0) {
    throw invalidArgument(
      missing.map((k) => ({
        field: `${at}: ${k}`,
        description: `${k} is part of the natural key (${naturalKey.join(', ')}): every record needs it`,
      })),
    );
  }
}

/** A given timestamp, in the one form the list filters and cursors compare. */
const given = (t: unknown) => (typeof t === 'string' ? canonicalTimestamp(t) : null);

const pause = () => new Promise((resolve) => setTimeout(resolve, pauseMs));

export class RecordImport {
  private readonly scratch = new Database('');
  private readonly naturalKey: string[];
  private readonly table: Table;
  /** the parent resource's type and table */
  private readonly parent?: { type: string; table: Table };
  /** parents seen to exist while checking */
  private readonly parents = new Set<string>();
  private readonly stage: Database.Statement<[number, string, string | null, string, string | null, string | null]>;
  private readonly firstWith: Database.Statement<[string], { n: number }>;
  private readonly after: Database.Statement<[number, number], Staged>;

  constructor(
    private readonly store: Store,
    private readonly resources: Resources,
    private readonly r: ResourceModel,
  ) {
    if (!r.naturalKey)
      throw new Error(`${r.collection} declares no naturalKey: the import cannot tell a new record from a stored one`);
    this.naturalKey = r.naturalKey;
    this.table = resources.table(r.type);
    const parentType = r.parent && resources.model.resources[r.parent].type;
    if (parentType) this.parent = { type: parentType, table: resources.table(parentType) };
    // Nothing here outlives the process: no journal, no syncing.
    this.scratch.pragma('journal_mode = off');
    this.scratch.pragma('synchronous = off');
    this.scratch.exec(
      'create table staged (n integer primary key, key text not null unique, parent text, record text not null, ' +
        'create_time text, update_time text)',
    );
    this.stage = this.scratch.prepare('insert into staged values (?, ?, ?, ?, ?, ?) on conflict (key) do nothing');
    this.firstWith = this.scratch.prepare('select n from staged where key = ?');
    this.after = this.scratch.prepare(
      'select n, parent, record, create_time as createTime, update_time as updateTime from staged ' +
        'where n > ? order by n limit ?',
    );
    // One transaction for all the staging: a commit per record would write the pages of each.
    this.scratch.exec('begin');
  }

  /** The natural key's properties and their values in a record as stored. */
  private keyOf(record: Row): Row {
    return Object.fromEntries(
      this.naturalKey.map((k) => {
        const property = k === 'parent' ? 'parentUid' : k;
        return [property, record[property] ?? null];
      }),
    );
  }

  /** Checks record n (counted from 1) and stages it; an error names the record. */
  async add(n: number, parent: string | undefined, data: Row): Promise<void> {
    const at = `record ${n}`;
    if (parent !== undefined && this.parent && !this.parents.has(parent)) {
      checkUid(parent, `${at}: parent`);
      if (!(await this.parent.table.get(parent))) throw notFound(this.parent.type, parent);
      this.parents.add(parent);
    }
    const fields = importedFields(this.r, data, at);
    const createTime = given(data.createTime);
    const record: Row = { ...fields, parentUid: parent ?? null, createTime: createTime ?? undefined };
    checkNaturalKey(this.naturalKey, record, at);
    const key = JSON.stringify(Object.values(this.keyOf(record)));
    const staged = this.stage.run(n, key, parent ?? null, JSON.stringify(fields), createTime, given(data.updateTime));
    if (staged.changes === 0)
      throw invalidArgument([
        { field: at, description: `the same ${this.naturalKey.join(', ')} as record ${this.firstWith.get(key)!.n}` },
      ]);
  }

  /**
   * Writes the staged records in steps: a record whose key matches a stored one replaces that record's fields
   * and keeps its uid (and its createTime unless it gives one); any other is created. createTime and updateTime
   * are kept when given.
   */
  async write(): Promise<{ created: number; updated: number }> {
    const done = { created: 0, updated: 0, last: 0 };
    try {
      for (;;) {
        const step = await this.store.transaction((sql) => this.step(sql, done.last));
        done.created += step.created;
        done.updated += step.updated;
        done.last = step.last;
        if (step.finished) break;
        await pause();
      }
    } catch (e) {
      if (done.last === 0) throw e;
      throw new PartialImport(done.created + done.updated, e);
    }
    this.resources.noteWrite(this.r, 'create');
    return { created: done.created, updated: done.updated };
  }

  /** One transaction: the records after the last written, for up to stepMs. */
  private async step(sql: Sql, last: number) {
    const started = performance.now();
    // The transaction's own counts where it keeps them (PostgreSQL's, written at its commit), else the step's.
    const counts = sql.counts ? undefined : this.table.countChanges();
    const shared: Shared = { sql, time: now(), mint: uidRun(), counts };
    const step = { created: 0, updated: 0, last, finished: false };
    const parents = new Set<string>();
    do {
      const rows = this.after.all(step.last, batchSize);
      for (const row of rows) {
        if (row.parent !== null && this.parent && !parents.has(row.parent)) {
          // A parent deleted since it was checked is not written under.
          if (!(await this.parent.table.get(row.parent, sql))) throw notFound(this.parent.type, row.parent);
          parents.add(row.parent);
        }
        if (await this.writeOne(row, shared)) step.created++;
        else step.updated++;
      }
      step.last = rows.at(-1)?.n ?? step.last;
      step.finished = rows.length < batchSize;
    } while (!step.finished && performance.now() - started < stepMs);
    await shared.counts?.write(sql);
    return step;
  }

  /** Inserts or replaces one record; true when it was created. */
  private async writeOne(row: Staged, { sql, time, mint, counts }: Shared): Promise<boolean> {
    const fields = JSON.parse(row.record) as Row;
    const updateTime = row.updateTime ?? row.createTime ?? time;
    const existing = await this.table.lastWith(
      sql,
      this.keyOf({ ...fields, parentUid: row.parent, createTime: row.createTime }),
    );
    if (existing) {
      // A replacement: fields the record leaves out are cleared, as the file is the whole record.
      const changes: Row = { createTime: row.createTime ?? existing.createTime, updateTime };
      for (const name of Object.keys(this.r.fields)) changes[name] = fields[name] ?? null;
      await this.table.update(sql, existing.uid, changes);
      return false;
    }
    const uid = uidFor(this.r, row.parent ?? undefined, mint);
    const record = { ...fields, parentUid: row.parent, uid, createTime: row.createTime ?? time, updateTime };
    await this.table.insert(sql, record, counts);
    return true;
  }

  close(): void {
    this.scratch.close();
  }
}
