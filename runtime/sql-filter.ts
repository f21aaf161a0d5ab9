// Compiles the filters the runtime writes (MikroORM's filter syntax: $and, $or, $in, $gt, $gte, $lt, $lte, $ne,
// $like, null, and JSON properties) to SQL for SQLite, for the read paths that skip the ORM. Anything else
// throws UnsupportedFilter and the caller uses the ORM instead, so a new kind of condition is slower, never wrong.

export interface Column {
  /** SQL column name */
  name: string;
  kind: 'json' | 'boolean' | 'plain';
}

export type Filter = Record<string, unknown>;

export class UnsupportedFilter extends Error {}

export interface CompiledFilter {
  sql: string;
  params: unknown[];
}

export const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function sqlValue(v: unknown, column: Column): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v === null || typeof v === 'string' || typeof v === 'number') return v;
  throw new UnsupportedFilter(`value ${JSON.stringify(v)} for ${column.name}`);
}

// A $like pattern escapes its wildcards with a backslash (see containsPattern).
const comparisons: Record<string, string> = { $gt: '> ?', $gte: '>= ?', $lt: '< ?', $lte: '<= ?', $like: "like ? escape '\\'" };

/**
 * The $like pattern for "contains this text": % and _ in the text match themselves, not any characters. The
 * ORM's own $like has no ESCAPE clause, so such a pattern is only meant for this compiler.
 */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}

/** One column (or JSON path in it) against a value or an operator object. */
function condition(target: string, column: Column, value: unknown, params: unknown[]): string {
  if (isPlainObject(value) && column.kind === 'json' && Object.keys(value).every((k) => !k.startsWith('$'))) {
    return jsonProperties(target, value, params);
  }
  if (!isPlainObject(value)) {
    if (value === null) return `${target} is null`;
    params.push(sqlValue(value, column));
    return `${target} = ?`;
  }
  const parts: string[] = [];
  for (const [op, operand] of Object.entries(value)) {
    if (op === '$in') {
      if (!Array.isArray(operand)) throw new UnsupportedFilter('$in takes an array');
      if (operand.length === 0) {
        parts.push('0');
        continue;
      }
      params.push(...operand.map((v) => sqlValue(v, column)));
      parts.push(`${target} in (${operand.map(() => '?').join(', ')})`);
    } else if (op === '$ne') {
      if (operand === null) parts.push(`${target} is not null`);
      else {
        params.push(sqlValue(operand, column));
        parts.push(`${target} <> ?`);
      }
    } else if (op in comparisons) {
      params.push(sqlValue(operand, column));
      parts.push(`${target} ${comparisons[op]}`);
    } else {
      throw new UnsupportedFilter(`operator ${op}`);
    }
  }
  return parts.length === 1 ? parts[0] : `(${parts.join(' and ')})`;
}

/** {scanner: {name: 'GRYPE'}}: conditions on properties inside a JSON column. */
function jsonProperties(target: string, value: Record<string, unknown>, params: unknown[], path = '$'): string {
  const parts: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (key.startsWith('$') || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new UnsupportedFilter(`JSON key ${key}`);
    const inner = `${path}.${key}`;
    if (isPlainObject(v) && Object.keys(v).every((k) => !k.startsWith('$'))) parts.push(jsonProperties(target, v, params, inner));
    else parts.push(condition(`json_extract(${target}, '${inner}')`, { name: inner, kind: 'plain' }, v, params));
  }
  return parts.length === 1 ? parts[0] : `(${parts.join(' and ')})`;
}

const lowerOps = new Set(['$gt', '$gte']);
const upperOps = new Set(['$lt', '$lte']);
type Bound = [op: string, value: string | number];

/**
 * Ranges on one property ANDed together become one range. SQLite seeks an index with one lower and one upper
 * bound per column: given a scope's range and a cursor's "after" on the same uid index, it would seek to the
 * start of the scope and read every row up to the cursor.
 */
function mergeRanges(filters: Filter[]): Filter[] {
  const bounds = new Map<string, { lower?: Bound; upper?: Bound }>();
  const rest: Filter[] = [];
  const flat = filters.flatMap((f) => (Object.keys(f).length === 1 && Array.isArray(f.$and) ? f.$and as Filter[] : [f]));
  for (const f of flat) {
    const [key, ...more] = Object.keys(f);
    const ops = isPlainObject(f[key]) ? Object.entries(f[key] as Record<string, unknown>) : [];
    const mergeable = key !== undefined && more.length === 0 && !key.startsWith('$') && ops.length > 0
      && ops.every(([op, v]) => (lowerOps.has(op) || upperOps.has(op)) && (typeof v === 'string' || typeof v === 'number'));
    const b = bounds.get(key) ?? {};
    const sameType = ops.every(([, v]) => [b.lower, b.upper].every((x) => !x || typeof x[1] === typeof v));
    if (!mergeable || !sameType) {
      rest.push(f);
      continue;
    }
    for (const [op, v] of ops as [string, string | number][]) {
      if (lowerOps.has(op)) {
        if (!b.lower || v > b.lower[1] || (v === b.lower[1] && op === '$gt')) b.lower = [op, v];
      } else if (!b.upper || v < b.upper[1] || (v === b.upper[1] && op === '$lt')) b.upper = [op, v];
    }
    bounds.set(key, b);
  }
  for (const [key, { lower, upper }] of bounds) {
    rest.push({ [key]: Object.fromEntries([lower, upper].filter((x): x is Bound => !!x)) });
  }
  return rest;
}

function compileInto(filter: Filter, columns: ReadonlyMap<string, Column>, params: unknown[]): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value)) throw new UnsupportedFilter(`${key} takes an array`);
      if (value.length === 0) {
        parts.push(key === '$and' ? '1' : '0');
        continue;
      }
      const terms = key === '$and' ? mergeRanges(value as Filter[]) : value as Filter[];
      const joined = terms.map((f) => compileInto(f, columns, params)).join(key === '$and' ? ' and ' : ' or ');
      parts.push(`(${joined})`);
      continue;
    }
    const column = columns.get(key);
    if (!column) throw new UnsupportedFilter(`property ${key}`);
    parts.push(condition(quoteIdentifier(column.name), column, value, params));
  }
  return parts.length === 0 ? '1' : parts.join(' and ');
}

/** The SQL condition and its parameters; throws UnsupportedFilter for what it does not know. */
export function compileFilter(filter: Filter, columns: ReadonlyMap<string, Column>): CompiledFilter {
  const params: unknown[] = [];
  const sql = compileInto(filter, columns, params);
  return { sql, params };
}
