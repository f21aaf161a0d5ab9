// What differs between the SQL engines the runtime speaks, and nothing else: statements of our own are written
// once, with `?` for each parameter, and take these pieces where engines disagree. SQLite is the one served
// today; PostgreSQL plugs in here (and as a connection behind runtime/storage/sql.ts's Sql).

/** The pieces of SQL an engine renders JSON with (runtime/tables/answer-json.ts renders answers with them). */
export interface JsonSql {
  /** A column's value as a JSON value: text quoted, a number as it is, NULL as null. */
  value(expression: string): string;
  /** A boolean column's value as true or false. */
  boolean(expression: string): string;
  /** Whether a JSON column holds an object. */
  isObject(expression: string): string;
  /** The JSON text of the member `key` of a JSON column's object; NULL when it has none. */
  member(expression: string, key: string): string;
}

export type ColumnKind = 'json' | 'boolean' | 'int64' | 'plain';
/**
 * What a parameter is compared with or stored in: a column of a kind, a value inside a JSON column, or a whole
 * value stored in a JSON column (always written as JSON text, a string too: answers show that text as it is).
 */
export type ParameterKind = ColumnKind | 'insideJson' | 'storedJson';

export interface Column {
  /** SQL column name */
  name: string;
  /** int64: an integer column whose values the runtime holds as exact decimal text */
  kind: ColumnKind;
  /** the column never holds NULL (uid, createTime): where NULLs sort makes no difference to its order */
  notNull?: boolean;
}

export interface Dialect {
  readonly name: 'sqlite' | 'postgresql';
  /** The text at a path inside a JSON column, as an expression that compares with a parameter. */
  jsonText(column: string, path: readonly string[]): string;
  /** A column as the runtime reads it: an int64 as its decimal text (beyond 2^53 a number would be inexact). */
  selected(column: Column): string;
  /** A value as bound to a parameter compared with, or stored in, a column of this kind. */
  parameter(kind: ParameterKind, value: unknown): unknown;
  /** `limit ? offset ?` and its parameters; a limit below 0 is no limit. */
  limit(limit: number, offset: number): { sql: string; params: unknown[] };
  /**
   * `expression` is one of the values, bound as they bind to this kind of parameter: the statement has one
   * parameter however many values there are, so one text (and one prepared statement) serves every length.
   */
  oneOf(expression: string, kind: ParameterKind, values: readonly unknown[]): { sql: string; param: unknown };
  /** LIKE ignoring case, as a contains filter does: SQLite's LIKE does, PostgreSQL's ILIKE does. */
  readonly like: string;
  /**
   * One key of an ORDER BY; NULLs first ascending and last descending, as the page cursors expect. notNull: the
   * expression holds none, so the order may be the one its index has.
   */
  orderBy(expression: string, desc: boolean, notNull?: boolean): string;
  /**
   * How the engine renders answers as JSON text (runtime/tables/answer-json.ts); without it they are made in
   * JavaScript. PostgreSQL has none. Measured with named statements (planned once per connection), rendering a
   * page of 50 repos in the database took a quarter to a third of the instance's CPU off (515/488 to 395/319 µs per
   * list) and put it on the database, for no more lists per second on one machine (1,909/1,999 shaped in JavaScript,
   * 1,780/2,266 rendered): the database is the one part instances share, so the work stays with the instances.
   * And jsonb prints its lists and objects with spaces (["a", "b"]), so the same record would be answered in two
   * spellings on the two engines.
   */
  readonly json?: JsonSql;
  /** Rows each scope's counts are spread over (runtime/storage/scope-counts.ts): several where several processes write. */
  readonly countShards: number;
  /**
   * The clause that locks the rows a select reads until the transaction ends, so that what a write depends on
   * cannot change under it: `keyShare` (a parent or a grant: no delete), `share` (no update either), `update`
   * (the record the write changes), `turn` (writes of one kind take turns on a row, a quota's organization,
   * while creates under it, FOR KEY SHARE, go on), `claim` (a row one worker takes, FOR UPDATE SKIP LOCKED: the
   * others pass it by instead of waiting). SQLite has one writer at a time: nothing to lock.
   */
  lock(kind: RowLock): string;
}

export type RowLock = 'keyShare' | 'share' | 'update' | 'turn' | 'claim';

export const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Keys of a JSON path: names only, so a path can be written into the statement's text. */
function checkedPath(path: readonly string[]): readonly string[] {
  for (const key of path) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`JSON key ${key}`);
  return path;
}

export const sqlite: Dialect = {
  name: 'sqlite',
  countShards: 1,
  lock: () => '',
  like: 'like',
  jsonText: (column, path) => `json_extract(${column}, '$.${checkedPath(path).join('.')}')`,
  selected: (c) => (c.kind === 'int64' ? `cast(${quoteIdentifier(c.name)} as text)` : quoteIdentifier(c.name)),
  parameter: (kind, v) => {
    if (v === undefined || v === null) return null;
    if (kind === 'storedJson' || (kind === 'json' && typeof v === 'object')) return JSON.stringify(v);
    // SQLite has no boolean: 1 and 0, in a boolean column and inside JSON alike.
    if (typeof v === 'boolean') return v ? 1 : 0;
    return v;
  },
  // A JSON array read by json_each: the planner still seeks the expression's index once per value.
  oneOf(expression, kind, values) {
    return {
      sql: `${expression} in (select value from json_each(?))`,
      param: JSON.stringify(values.map((v) => sqlite.parameter(kind, v))),
    };
  },
  // The limit is written into the text: SQLite's plan may depend on a bound LIMIT, so it prepares such a
  // statement again at every run (a tenth of a page's time). Page sizes are few, and so are the statements.
  limit: (limit, offset) => {
    if (!Number.isSafeInteger(limit)) throw new Error(`a limit must be an integer, not ${limit}`);
    return { sql: `limit ${limit} offset ?`, params: [offset] };
  },
  // SQLite's own order of NULLs.
  orderBy: (expression, desc) => `${expression} ${desc ? 'desc' : 'asc'}`,
  json: {
    value: (e) => `json_quote(${e})`,
    boolean: (e) => `case when ${e} = 1 then 'true' else 'false' end`,
    isObject: (e) => `json_type(${e}) = 'object'`,
    member: (e, key) => `(${e} -> '$.${checkedPath([key])[0]}')`,
  },
};

/**
 * PostgreSQL: JSON columns are jsonb, read with #>> as text; booleans are booleans; an int64 column is bigint and
 * compares with its decimal text. Text compares byte by byte only in a database made with the C collation,
 * which runtime/storage/postgres-store.ts requires (uid ranges depend on it).
 */
const postgresLocks: Record<RowLock, string> = {
  keyShare: ' for key share',
  share: ' for share',
  update: ' for update',
  turn: ' for no key update',
  claim: ' for update skip locked',
};

export const postgresql: Dialect = {
  name: 'postgresql',
  countShards: 16,
  lock: (kind) => postgresLocks[kind],
  like: 'ilike',
  jsonText: (column, path) => `(${column} #>> '{${checkedPath(path).join(',')}}')`,
  selected: (c) => (c.kind === 'int64' ? `cast(${quoteIdentifier(c.name)} as text)` : quoteIdentifier(c.name)),
  parameter: (kind, v) => {
    if (v === undefined || v === null) return null;
    if (kind === 'json' || kind === 'storedJson') return JSON.stringify(v);
    // Inside JSON everything is compared as the text #>> gives: true, 12, "text" without quotes.
    if (kind === 'insideJson') return String(v);
    if (kind === 'int64') return String(v);
    return v;
  },
  // An array the driver sends as one parameter; PostgreSQL gives it the array type of the expression's.
  oneOf(expression, kind, values) {
    return { sql: `${expression} = any(?)`, param: values.map((v) => postgresql.parameter(kind, v)) };
  },
  // LIMIT NULL is no limit.
  limit: (limit, offset) => ({ sql: 'limit ? offset ?', params: [limit < 0 ? null : limit, offset] }),
  // An index keeps NULLs last ascending: ordered otherwise, a page sorts every row of its range. A column that
  // holds no NULL is ordered as its index is.
  orderBy: (expression, desc, notNull) =>
    notNull
      ? `${expression} ${desc ? 'desc' : 'asc'}`
      : `${expression} ${desc ? 'desc nulls last' : 'asc nulls first'}`,
};
