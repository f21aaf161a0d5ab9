// Per-scope counts: for every table of records with a place in the hierarchy, how many records lie below each
// scope (a uid) and how many have it as their parent, kept in the same transaction as the write that changes
// them. A list's totalCount over a scope is then a few index reads at any size and any write rate, and exact
// whichever process wrote (an import beside the server): there is nothing to invalidate.
//
// Where several processes write at once (PostgreSQL) one row per scope would be one hot row: every create in a
// tenant would wait for the one before it to commit. A scope's counts are kept in shards there: the row of the
// scope itself (shard 0, all SQLite ever writes, and what databases made before shards hold) and the rows
// `<scope>#1` .. `<scope>#15`. A transaction adds to one shard, its writer's (concurrent writers of one process
// share none) or picked at random; a read sums them, in one statement, so it sees every committed transaction
// whole: exact at every read.
import { EntitySchema, type EntityMetadata } from '@mikro-orm/core';
import type { Row } from '../model/records.js';
import { together, type PendingCounts, type Sql } from './sql.js';
import { ancestorsOf } from '../model/uid.js';

export interface ScopeCount {
  /** the table counted */
  collection: string;
  /** a uid, or '' for the whole table */
  scope: string;
  /** records whose uid lies strictly below the scope ('': every record) */
  below: number;
  /** records whose parent is the scope ('': root records) */
  children: number;
}

export const scopeCountEntity = new EntitySchema<ScopeCount>({
  name: 'ScopeCount',
  tableName: 'scope_counts',
  properties: {
    collection: { type: 'string', primary: true },
    scope: { type: 'string', primary: true },
    below: { type: 'number', default: 0 },
    children: { type: 'number', default: 0 },
  },
});

/** A table is counted when its records have a place in the hierarchy: a uid and a parent. */
export function isCounted(meta: EntityMetadata): boolean {
  return meta.props.some((p) => p.name === 'uid') && meta.props.some((p) => p.name === 'parentUid');
}

/** What a table's counts are built from once: the marker row says they are kept from then on. */
const builtMarker = { collection: '', scope: 'built' };

/** The rows a scope's counts are kept in: shard 0 is the scope's own. */
function shardKey(scope: string, shard: number): string {
  return shard === 0 ? scope : `${scope}#${shard}`;
}

/** The scope a shard's row counts for. */
function scopeOfKey(key: string): string {
  const mark = key.indexOf('#');
  return mark < 0 ? key : key.slice(0, mark);
}

/** The upsert of so many rows, made once per size: the same text each time is one lookup of its prepared form. */
const upserts = new Map<number, string>();
function upsert(rows: number): string {
  let text = upserts.get(rows);
  if (text === undefined)
    upserts.set(
      rows,
      (text =
        `insert into scope_counts (collection, scope, below, children) values ${Array(rows).fill('(?, ?, ?, ?)').join(', ')} ` +
        'on conflict (collection, scope) do update set below = scope_counts.below + excluded.below, children = scope_counts.children + excluded.children'),
    );
  return text;
}

/** One count row's change in a transaction. */
interface CountChange {
  collection: string;
  /** the scope's row (its shard's key) */
  row: string;
  below: number;
  children: number;
}

/** Rows locked in the same order by every transaction: (collection, scope row), byte order as the index's. */
const byRow = (a: CountChange, b: CountChange) =>
  a.collection < b.collection ? -1 : a.collection > b.collection ? 1 : a.row < b.row ? -1 : a.row > b.row ? 1 : 0;

/**
 * Count changes of one transaction, gathered per table and scope so that many records cost one upsert per scope
 * (an import's step), and written once, in the same transaction as the records. On PostgreSQL a write
 * transaction gathers all of its changes and writes them last, just before its commit (runtime/storage/
 * postgres-store.ts): its count rows are locked for the shortest time, and in one order across every table, so
 * two transactions adding to the same rows wait for each other and never deadlock.
 */
export class CountChanges implements PendingCounts {
  /** keyed by collection, NUL, the scope's row */
  private readonly changes = new Map<string, CountChange>();

  /** the shard this transaction adds to: given (a writer's own, so concurrent writers share none), or random */
  private readonly shard: number;

  /** shards: how many rows each scope's counts are spread over (1: one row, SQLite's single writer). */
  constructor(shards = 1, shard = Math.floor(Math.random() * shards)) {
    this.shard = shard % shards;
  }

  private add(collection: string, scope: string, below: number, children: number): void {
    const row = shardKey(scope, this.shard);
    const key = `${collection}\0${row}`;
    const kept = this.changes.get(key);
    if (kept) {
      kept.below += below;
      kept.children += children;
    } else this.changes.set(key, { collection, row, below, children });
  }

  /** One record of a table added (+1) or removed (-1): every scope above its uid, and its parent's children. */
  note(collection: string, uid: string, parentUid: string | null, delta: 1 | -1): this {
    this.add(collection, '', delta, parentUid === null ? delta : 0);
    for (const scope of ancestorsOf(uid)) this.add(collection, scope, delta, 0);
    // A record whose uid is its parent's (one per parent) has that parent among no ancestors of its own.
    if (parentUid !== null) this.add(collection, parentUid, 0, delta);
    return this;
  }

  /** Whether any change is gathered (and not yet written). */
  pending(): boolean {
    return this.changes.size > 0;
  }

  /** The changes written, every statement asked for at once: on PostgreSQL they go in one batch, in order. */
  async write(sql: Sql): Promise<void> {
    // Changes that cancel out (a record made and removed in one transaction) lock no row.
    const rows: CountChange[] = [];
    for (const change of this.changes.values()) if (change.below !== 0 || change.children !== 0) rows.push(change);
    rows.sort(byRow);
    this.changes.clear();
    const statements: Promise<number>[] = [];
    for (let i = 0; i < rows.length; i += 200) {
      const batch = rows.slice(i, i + 200);
      const params: unknown[] = [];
      for (const { collection, row, below, children } of batch) params.push(collection, row, below, children);
      statements.push(sql.run(upsert(batch.length), params));
    }
    await together(statements);
  }
}

/** The counts of these scopes, each the sum of its shards; a scope with no row is absent. */
export async function readCounts(
  sql: Sql,
  collection: string,
  scopes: string[],
  shards = 1,
): Promise<Map<string, { below: number; children: number }>> {
  const keys = scopes.flatMap((scope) => Array.from({ length: shards }, (_, n) => shardKey(scope, n)));
  const rows = await sql.all(
    `select scope, below, children from scope_counts where collection = ? and scope in (${keys.map(() => '?').join(', ')})`,
    [collection, ...keys],
  );
  const counts = new Map<string, { below: number; children: number }>();
  for (const r of rows) {
    const scope = scopeOfKey(r.scope as string);
    const sum = counts.get(scope) ?? { below: 0, children: 0 };
    sum.below += Number(r.below);
    sum.children += Number(r.children);
    counts.set(scope, sum);
  }
  return counts;
}

/**
 * Counts every table once, from its rows, when the database has none yet (made before counts were kept): in
 * one write transaction that checks the marker first, so two processes opening at once count once.
 */
export async function buildCounts(
  sql: Sql,
  tables: { collection: string; table: string; parentColumn: string }[],
): Promise<void> {
  const [built] = await sql.all('select 1 from scope_counts where collection = ? and scope = ?', [
    builtMarker.collection,
    builtMarker.scope,
  ]);
  if (built) return;
  for (const { collection, table, parentColumn } of tables) {
    const [{ depth }] = await sql.all(`select max(length(uid)) as depth from ${table}`);
    // uids are 40 hex characters, then "/" and 16 hex per level: a scope at level k is a uid's first 40 + 17k.
    const levels = depth ? Math.round((Number(depth) - 40) / 17) : 0;
    const below: Row[] = [...(await sql.all(`select '' as scope, count(*) as n from ${table}`))];
    for (let k = 0; k < levels; k++) {
      const n = 40 + 17 * k;
      below.push(
        ...(await sql.all(
          `select substr(uid, 1, ${n}) as scope, count(*) as n from ${table} where length(uid) > ${n} group by 1`,
        )),
      );
    }
    const children = await sql.all(
      `select coalesce(${parentColumn}, '') as scope, count(*) as n from ${table} group by 1`,
    );
    const rows = [
      ...below.map((r): [string, number, number] => [r.scope as string, Number(r.n), 0]),
      ...children.map((r): [string, number, number] => [r.scope as string, 0, Number(r.n)]),
    ];
    for (let i = 0; i < rows.length; i += 200) {
      const batch = rows.slice(i, i + 200);
      await sql.run(
        upsert(batch.length),
        batch.flatMap(([scope, b, c]) => [collection, scope, b, c]),
      );
    }
  }
  await sql.run('insert into scope_counts (collection, scope, below, children) values (?, ?, 1, 0)', [
    builtMarker.collection,
    builtMarker.scope,
  ]);
}
