// Compiles a condition (runtime/tables/condition.ts) to the SQL of a dialect. Every value is a bound parameter, never
// text of the statement; a property the table does not have throws UnsupportedCondition, a mistake in the
// runtime or a handler rather than in a request.
import type { Bound, Condition, Value } from './condition.js';
import { quoteIdentifier, type Column, type Dialect, type ParameterKind } from '../storage/dialect.js';

export class UnsupportedCondition extends Error {}

export interface CompiledCondition {
  sql: string;
  params: unknown[];
}

type Range = Extract<Condition, { is: 'range' }>;
/** What a condition compares: a column, or a value inside a JSON column. */
type Target = { name: string; kind: ParameterKind };

/**
 * How two bounds of one column compare, as the database will compare them: the decimal text of an int64 column
 * as the number it is ("9" < "10"). Undefined when they do not compare (text that is not an integer, or values
 * of different types): such ranges are not merged.
 */
function order(column: Target, a: Value, b: Value): number | undefined {
  if (typeof a !== typeof b) return undefined;
  if (column.kind !== 'int64') return a < b ? -1 : a > b ? 1 : 0;
  try {
    const [x, y] = [BigInt(a), BigInt(b)];
    return x < y ? -1 : x > y ? 1 : 0;
  } catch {
    return undefined;
  }
}

/** The tighter of two lower (sign 1) or upper (sign -1) bounds; at equal values the exclusive one. */
function tighter(column: Target, a: Bound | undefined, b: Bound | undefined, sign: 1 | -1): Bound | undefined | null {
  if (!a || !b) return a ?? b;
  const c = order(column, a.value, b.value);
  if (c === undefined) return null;
  if (c === 0) return a.inclusive ? b : a;
  return c * sign > 0 ? a : b;
}

export class ConditionCompiler {
  constructor(
    private readonly columns: ReadonlyMap<string, Column>,
    private readonly dialect: Dialect,
  ) {}

  compile<T>(condition: Condition<T>): CompiledCondition {
    const params: unknown[] = [];
    // Properties were checked against the record's type where the caller had one; here, against the columns.
    return { sql: this.term(condition as Condition, params), params };
  }

  /** The column, and the expression a condition on the property compares. */
  private target(property: string): { column: Target; sql: string } {
    const [name, ...path] = property.split('.');
    const column = this.columns.get(name);
    if (!column) throw new UnsupportedCondition(`no property ${name}`);
    if (path.length === 0) return { column, sql: quoteIdentifier(column.name) };
    if (column.kind !== 'json') throw new UnsupportedCondition(`${name} is not JSON: no ${property}`);
    // Inside JSON the values are plain: an int64's text would not compare as a number there.
    return {
      column: { name: property, kind: 'insideJson' },
      sql: this.dialect.jsonText(quoteIdentifier(column.name), path),
    };
  }

  private bind(params: unknown[], column: Target, value: Value): string {
    params.push(this.dialect.parameter(column.kind, value));
    return '?';
  }

  private term(c: Condition, params: unknown[]): string {
    switch (c.is) {
      case 'and':
      case 'or': {
        const terms = c.is === 'and' ? this.mergeRanges(c.terms) : c.terms;
        if (terms.length === 0) return c.is === 'and' ? '1 = 1' : '1 = 0';
        if (terms.length === 1) return this.term(terms[0], params);
        return `(${terms.map((t) => this.term(t, params)).join(` ${c.is} `)})`;
      }
      case 'null':
      case 'notNull':
        return `${this.target(c.property).sql} is ${c.is === 'null' ? '' : 'not '}null`;
    }
    const { column, sql } = this.target(c.property);
    switch (c.is) {
      case 'equal':
        return `${sql} = ${this.bind(params, column, c.value)}`;
      case 'in': {
        if (c.values.length === 0) return '1 = 0';
        if (c.values.length === 1) return `${sql} = ${this.bind(params, column, c.values[0])}`;
        // One parameter for any number of values: a text per list length would be a statement per length.
        const any = this.dialect.oneOf(sql, column.kind, c.values);
        params.push(any.param);
        return any.sql;
      }
      case 'like':
        params.push(c.pattern);
        return `${sql} ${this.dialect.like} ? escape '\\'`;
      case 'range':
        return this.range(sql, column, c, params);
    }
  }

  private range(sql: string, column: Target, c: Range, params: unknown[]): string {
    const parts = [
      c.lower && `${sql} ${c.lower.inclusive ? '>=' : '>'} ${this.bind(params, column, c.lower.value)}`,
      c.upper && `${sql} ${c.upper.inclusive ? '<=' : '<'} ${this.bind(params, column, c.upper.value)}`,
    ].filter(Boolean);
    return parts.length === 0 ? '1 = 1' : parts.length === 1 ? parts[0]! : `(${parts.join(' and ')})`;
  }

  /**
   * Nested ands flattened, and ranges on one property made one range. A database seeks an index with one lower
   * and one upper bound per column: given a scope's range and a cursor's "after" on the same uid index, it would
   * seek to the start of the scope and read every row up to the cursor.
   */
  private mergeRanges(terms: Condition[]): Condition[] {
    const flat = terms.flatMap((t): Condition[] => (t.is === 'and' ? this.mergeRanges(t.terms) : [t]));
    const merged = new Map<string, Range>();
    const rest: Condition[] = [];
    for (const t of flat) {
      if (t.is !== 'range') {
        rest.push(t);
        continue;
      }
      const kept = merged.get(t.property);
      if (!kept) {
        merged.set(t.property, t);
        continue;
      }
      const column = this.target(t.property).column;
      const lower = tighter(column, kept.lower, t.lower, 1);
      const upper = tighter(column, kept.upper, t.upper, -1);
      if (lower === null || upper === null) rest.push(t);
      else merged.set(t.property, { is: 'range', property: t.property, lower, upper });
    }
    return [...rest, ...merged.values()];
  }
}
