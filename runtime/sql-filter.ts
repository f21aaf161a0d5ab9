// Compiles the filters the runtime writes (MikroORM's filter syntax: $and, $or, $in, $gt, $gte, $lt, $lte, $ne,
// $like, null, and JSON properties) to SQL for SQLite. Every value is a bound parameter, never text of the
// statement; anything else throws UnsupportedFilter, a mistake in the runtime rather than in a request.

export interface Column {
  /** SQL column name */
  name: string;
  /** int64: an INTEGER column whose values the runtime holds as decimal text (SQLite compares them as numbers) */
  kind: 'json' | 'boolean' | 'int64' | 'plain';
}

export type Filter = Record<string, unknown>;

export class UnsupportedFilter extends Error {}

export interface CompiledFilter {
  sql: string;
  params: unknown[];
}

export const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function sqlValue(v: unknown, column: Column): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v === null || typeof v === 'string' || typeof v === 'number') return v;
  throw new UnsupportedFilter(`value ${JSON.stringify(v)} for ${column.name}`);
}

// A $like pattern escapes its wildcards with a backslash (see containsPattern).
const comparisons: Record<string, string> = {
  $gt: '> ?',
  $gte: '>= ?',
  $lt: '< ?',
  $lte: '<= ?',
  $like: "like ? escape '\\'",
};

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
    if (isPlainObject(v) && Object.keys(v).every((k) => !k.startsWith('$')))
      parts.push(jsonProperties(target, v, params, inner));
    else parts.push(condition(`json_extract(${target}, '${inner}')`, { name: inner, kind: 'plain' }, v, params));
  }
  return parts.length === 1 ? parts[0] : `(${parts.join(' and ')})`;
}

const lowerOps = new Set(['$gt', '$gte']);
const upperOps = new Set(['$lt', '$lte']);
type Bound = [op: string, value: string | number];

/**
 * How two bounds of one column compare, as SQLite will compare them: the decimal text of an int64 column as the
 * number it is ("9" < "10"). Undefined when they do not compare (text that is not an integer): not merged.
 */
function boundOrder(column: Column | undefined, a: string | number, b: string | number): number | undefined {
  if (column?.kind !== 'int64') return a < b ? -1 : a > b ? 1 : 0;
  try {
    const [x, y] = [BigInt(a), BigInt(b)];
    return x < y ? -1 : x > y ? 1 : 0;
  } catch {
    return undefined;
  }
}

/** The bounds of a filter that is only a range on one property ({uid: {$gt, $lt}}), else undefined. */
function rangeOf(f: Filter): Bound[] | undefined {
  const [key, ...more] = Object.keys(f);
  if (key === undefined || more.length > 0 || key.startsWith('$') || !isPlainObject(f[key])) return undefined;
  const ops = Object.entries(f[key] as Record<string, unknown>);
  const isBound = ([op, v]: [string, unknown]) =>
    (lowerOps.has(op) || upperOps.has(op)) && (typeof v === 'string' || typeof v === 'number');
  return ops.length > 0 && ops.every(isBound) ? (ops as Bound[]) : undefined;
}

/**
 * Ranges on one property ANDed together become one range. SQLite seeks an index with one lower and one upper
 * bound per column: given a scope's range and a cursor's "after" on the same uid index, it would seek to the
 * start of the scope and read every row up to the cursor.
 */
function mergeRanges(filters: Filter[], columns: ReadonlyMap<string, Column>): Filter[] {
  const bounds = new Map<string, { lower?: Bound; upper?: Bound }>();
  const rest: Filter[] = [];
  const flat = filters.flatMap((f) =>
    Object.keys(f).length === 1 && Array.isArray(f.$and) ? (f.$and as Filter[]) : [f],
  );
  for (const f of flat) {
    const [key] = Object.keys(f);
    const ops = rangeOf(f);
    const b = bounds.get(key) ?? {};
    const column = columns.get(key);
    // Every bound of the property, those kept and these, must compare with the others.
    const values = [b.lower?.[1], b.upper?.[1], ...(ops ?? []).map(([, v]) => v)].filter((v) => v !== undefined) as (
      string | number
    )[];
    const comparable = values.every(
      (v) => typeof v === typeof values[0] && boundOrder(column, v, values[0]) !== undefined,
    );
    if (!ops || !comparable) {
      rest.push(f);
      continue;
    }
    for (const [op, v] of ops) {
      const lower = lowerOps.has(op);
      const kept = lower ? b.lower : b.upper;
      // How much tighter v is than the bound kept: the tighter one wins, and at equal values the strict one.
      const tighter = kept ? boundOrder(column, v, kept[1])! * (lower ? 1 : -1) : 1;
      if (tighter > 0 || (tighter === 0 && (op === '$gt' || op === '$lt'))) {
        if (lower) b.lower = [op, v];
        else b.upper = [op, v];
      }
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
      const terms = key === '$and' ? mergeRanges(value as Filter[], columns) : (value as Filter[]);
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
