// How rows stored before a change of the spec take it (runtime/model/api-model.ts StoredChange, recorded by
// generator/schema-lock.ts): a renamed field's values copied to its new column, a retyped field's converted
// into its new column (every value that does not convert reported, and the migration refused), a default
// for old rows, or nothing (clear: old rows lack the value until a change sets it). Old columns are never
// dropped or changed: a step only fills a column the same migration adds, or old rows' unset values.
import type { ExistingRows, FieldModel, ResourceModel, StoredChange } from '../model/api-model.js';

type Execute = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/** One field's step: `from` a source column (type and rename), else old rows' unset values of `column`. */
export interface RowStep {
  table: string;
  field: string;
  f: FieldModel;
  column: string;
  from?: { column: string; type: string };
  rows: ExistingRows | 'copy';
  /** an enum's removed values: rows holding one (or a list holding one) take its new value, in place */
  renamed?: Record<string, string>;
  /** renamed: the enum's place inside the column's JSON, below the field (its dotted path without the field) */
  path?: string[];
  /** convert: each row's new value, by uid */
  values?: [string, unknown][];
}

const q = (name: string) => `"${name}"`;

/**
 * The steps a database recorded at version `recorded` needs; `stored` names a resource's table or a field's
 * column, `columns` are the database's columns of a table (none: a new table, no rows to carry).
 */
export function rowSteps(
  resources: Record<string, ResourceModel>,
  stored: (r: ResourceModel, field?: string) => string,
  columns: (table: string) => Set<string> | undefined,
  recorded: number,
): RowStep[] {
  const steps: RowStep[] = [];
  for (const r of Object.values(resources)) {
    const table = stored(r);
    const has = columns(table);
    if (!has) continue;
    for (const [field, f] of Object.entries(r.fields)) {
      const pending = (f.changes ?? []).filter((c) => c.since > recorded);
      const column = stored(r, field);
      const moved = pending.filter((c) => c.kind === 'type' || c.kind === 'rename').at(-1);
      if (moved && !has.has(column)) {
        const source = moved.from?.find((c) => has.has(c));
        if (source)
          steps.push({ table, field, f, column, from: { column: source, type: typeOf(r, source) }, rows: moved.rows });
      }
      const required = pending.filter((c): c is StoredChange => c.kind === 'required').at(-1);
      if (required && typeof required.rows === 'object') steps.push({ table, field, f, column, rows: required.rows });
      // Oldest first, so that a value renamed twice ends as the last one names it.
      for (const c of pending.filter((c) => c.kind === 'values')) {
        const inside = c.path ? { field: c.path, path: c.path.split('.').slice(1) } : { field };
        steps.push({ table, ...inside, f, column, rows: 'copy', renamed: c.renamed });
      }
    }
  }
  return steps;
}

const typeOf = (r: ResourceModel, column: string) => r.retired?.[column]?.type ?? 'string';

const describe = (v: unknown) => JSON.stringify(typeof v === 'bigint' ? String(v) : v);

/**
 * Reads what convert steps convert, and fills their values; resolves to the refusals: each step whose rows do
 * not all convert, with the first of them.
 */
export async function convertRows(execute: Execute, steps: RowStep[]): Promise<string[]> {
  const refusals: string[] = [];
  for (const step of steps) {
    if (step.rows !== 'convert' || !step.from) continue;
    const f = step.f;
    const rows = await execute(
      `select ${q('uid')} as uid, ${q(step.from.column)} as v from ${q(step.table)} where ${q(step.from.column)} is not null`,
    );
    const failed: string[] = [];
    step.values = [];
    for (const row of rows) {
      const value = converted(f, step.from.type, row.v);
      if (value === undefined) failed.push(`${row.uid} (${describe(row.v)})`);
      else step.values.push([String(row.uid), value]);
    }
    if (failed.length > 0)
      refusals.push(
        `${step.table}.${step.field}: ${failed.length} stored value(s) do not convert from ${step.from.type} to ` +
          `${typeName(f)}: ${failed.slice(0, 5).join(', ')}${failed.length > 5 ? ', ...' : ''}. Correct them with ` +
          'the previous version, or declare existingRows: { default: V } or clear',
      );
  }
  return refusals;
}

/** Carries out the steps (in the migration's transaction). */
export async function applyRowSteps(execute: Execute, steps: RowStep[]): Promise<void> {
  for (const step of steps) {
    const [table, column] = [q(step.table), q(step.column)];
    if (step.renamed && (step.f.repeated || step.path))
      await renameInJson(execute, step.table, step.column, step.path ?? [], step.renamed);
    else if (step.renamed)
      for (const [from, to] of Object.entries(step.renamed))
        await execute(`update ${table} set ${column} = ? where ${column} = ?`, [to, from]);
    else if (step.rows === 'copy' && step.from) await execute(`update ${table} set ${column} = ${q(step.from.column)}`);
    else if (step.rows === 'convert')
      for (const [uid, value] of step.values ?? [])
        await execute(`update ${table} set ${column} = ? where "uid" = ?`, [value, uid]);
    else if (typeof step.rows === 'object') {
      const value = bound(step.f, step.rows.default);
      // A retyped or renamed field's new column: every old row; a field made required: old rows without it.
      await execute(`update ${table} set ${column} = ?${step.from ? '' : ` where ${column} is null`}`, [value]);
    }
  }
}

const batchRows = 500;

/**
 * An enum's removed values renamed inside each stored JSON value (a list of values, or at `path` inside objects,
 * lists of objects and maps; text on SQLite, jsonb on PostgreSQL): read in batches by uid and the rows that
 * change written back whole, in the migration's transaction.
 */
async function renameInJson(
  execute: Execute,
  table: string,
  column: string,
  path: string[],
  renamed: Record<string, string>,
) {
  const [uid, t, c] = [q('uid'), q(table), q(column)];
  for (let after = ''; ;) {
    const rows = await execute(
      `select ${uid} as uid, ${c} as v from ${t} where ${c} is not null and ${uid} > ? order by ${uid} limit ${batchRows}`,
      [after],
    );
    for (const row of rows) {
      const stored: unknown = typeof row.v === 'string' ? JSON.parse(row.v) : row.v;
      const value = renamedInside(stored, path, renamed);
      if (value !== stored)
        await execute(`update ${t} set ${c} = ? where ${uid} = ?`, [JSON.stringify(value), row.uid]);
    }
    if (rows.length < batchRows) return;
    after = String(rows.at(-1)!.uid);
  }
}

/**
 * `v` with the enum values at `path` renamed (* is each value of a map; a list, of values or of objects, is
 * gone through item by item): `v` itself when nothing changes. A list of values that then holds one twice keeps
 * it once, where it first stood.
 */
function renamedInside(v: unknown, path: string[], renamed: Record<string, string>): unknown {
  if (Array.isArray(v)) {
    const items = v.map((item) => renamedInside(item, path, renamed));
    if (items.every((item, i) => item === v[i])) return v;
    return path.length === 0 ? [...new Set(items)] : items;
  }
  if (path.length === 0) return typeof v === 'string' && Object.hasOwn(renamed, v) ? renamed[v] : v;
  if (typeof v !== 'object' || v === null) return v;
  const [head, ...rest] = path;
  const object = v as Record<string, unknown>;
  let changed: Record<string, unknown> | undefined;
  for (const key of head === '*' ? Object.keys(object) : Object.hasOwn(object, head) ? [head] : []) {
    const inner = renamedInside(object[key], rest, renamed);
    if (inner !== object[key]) (changed ??= { ...object })[key] = inner;
  }
  return changed ?? v;
}

/** Describes what the steps do, for --dry-run and the record in schema_migrations. */
export function describeRowSteps(steps: RowStep[]): string[] {
  return steps.map((s) => {
    const what = s.renamed
      ? `values renamed: ${Object.entries(s.renamed)
          .map(([from, to]) => `${from} -> ${to}`)
          .join(', ')}`
      : s.rows === 'copy'
        ? `copy ${s.from!.column}`
        : s.rows === 'convert'
          ? `convert ${s.values?.length ?? 0} value(s) of ${s.from!.column} (${s.from!.type})`
          : s.rows === 'clear'
            ? `leave unset (clear)${s.from ? `; ${s.from.column} kept as it is` : ''}`
            : `set ${describe(s.rows.default)} in ${s.from ? 'every old row' : 'old rows without a value'}`;
    return `-- ${s.table}.${s.column} (${s.field}): ${what}`;
  });
}

const typeName = (f: FieldModel) => (f.repeated ? `${f.type}[]` : f.type);

/** A value as its column binds it: int64 as exact text, booleans 1/0 (SQLite binds no booleans), JSON as text. */
function bound(f: FieldModel, v: unknown): unknown {
  if (f.repeated || f.type === 'object' || f.type === 'map') return JSON.stringify(v);
  if (f.type === 'bool') return v ? 1 : 0;
  if (f.type === 'int64') return String(v);
  return v;
}

const int64 = /^-?\d{1,19}$/;
const inInt64 = (s: string) => int64.test(s) && BigInt(s) <= 2n ** 63n - 1n && BigInt(s) >= -(2n ** 63n);
const isJson = (t: string) => t.endsWith('[]') || t === 'object' || t === 'map';

/** A scalar's text as read from either engine (bigints, numbers and text alike); undefined for anything else. */
const textOf = (v: unknown) =>
  typeof v === 'string' ? v.trim() : typeof v === 'number' || typeof v === 'bigint' ? String(v) : undefined;

/** By the new type: a stored scalar's text (or the value itself) as the new column binds it, or undefined. */
const scalar: Record<string, (text: string | undefined, v: unknown, f: FieldModel) => unknown> = {
  string: (text, v) => (typeof v === 'boolean' ? String(v) : text),
  enum: (text, _, f) => (text !== undefined && f.values?.includes(text) ? text : undefined),
  int64: (text) => (text !== undefined && inInt64(text) ? text : undefined),
  int32: (text) =>
    text !== undefined && int64.test(text) && Math.abs(Number(text)) < 2 ** 31 ? Number(text) : undefined,
  double: (text) => (text !== undefined && text !== '' && Number.isFinite(Number(text)) ? Number(text) : undefined),
  bool: (text, v) =>
    v === true || text === 'true' || text === '1' ? 1 : v === false || text === 'false' || text === '0' ? 0 : undefined,
};
scalar.timestamp = scalar.string;
scalar.duration = scalar.string;

/**
 * A stored value of `fromType` as field f stores it; undefined when it has none (then the row is reported).
 * A boolean read from SQLite is 1 or 0: as text it is "1" or "0", as a bool it converts back.
 */
export function converted(f: FieldModel, fromType: string, v: unknown): unknown {
  if (isJson(typeName(f)) || isJson(fromType))
    return typeName(f) === fromType ? (typeof v === 'string' ? v : JSON.stringify(v)) : undefined;
  const text = fromType === 'bool' && typeof v !== 'string' ? (v === true || v === 1 ? 'true' : 'false') : textOf(v);
  return scalar[f.type]?.(text, v, f);
}
