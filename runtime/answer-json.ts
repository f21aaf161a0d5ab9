// A resource's answer as JSON text, rendered by the database in the statement that reads its row: the members
// JSON.stringify(toResource(record)) writes, in the same order, with the same values, without a row of values,
// an object and a serialisation in between. A page of 50 repos costs about 110 µs of CPU read as values, shaped
// and serialised, and about 60 µs rendered so. Only fields whose answer is their stored value in another
// spelling are rendered by SQL; a resource with another kind of field (a map, a double, an object holding such
// a field) has no SQL answer and is shaped in JavaScript (runtime/answer-shape.ts).
import { quoteIdentifier, type Column } from './dialect.js';
import type { FieldModel, ResourceModel } from './model.js';
import { shownFields } from './records.js';

/** The pieces of SQL an engine renders JSON with. */
export interface JsonSql {
  /** A column's value as a JSON value: text quoted, a number as it is, NULL as null. */
  value(expression: string): string;
  /** A boolean column's value as true or false. */
  boolean(expression: string): string;
  /** A JSON column's value as compact JSON text. */
  text(expression: string): string;
  /** The JSON type of a JSON column's value ('object', 'null', ...), or of its member `key` (NULL: no such member). */
  typeOf(expression: string, key?: string): string;
  /** The JSON text of the member `key` of a JSON column's object. */
  member(expression: string, key: string): string;
}

/** Field types whose answer is the stored value itself (int64 is shown as decimal text, objects are rebuilt). */
const asStored = new Set<FieldModel['type']>(['string', 'enum', 'timestamp', 'duration', 'int32', 'bool']);

/** Whether a member of a JSON object, or an element of a list, is shown exactly as stored. */
const memberAsStored = (f: FieldModel) => asStored.has(f.type);

/** A SQL string literal of this text. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** `,"name":` as a SQL literal: every member but the uid follows another. */
const key = (name: string) => literal(`,${JSON.stringify(name)}:`);

/** `expression` followed by `then`, or nothing when `absent` holds. */
const unless = (absent: string, then: string) => `case when ${absent} then '' else ${then} end`;

/** The JSON of an object column rebuilt from its shown members in the field's order, unset ones left out. */
function objectJson(json: JsonSql, column: string, f: FieldModel): string | undefined {
  const members: string[] = [];
  for (const [name, sub] of shownFields(f.fields ?? {})) {
    if (!memberAsStored(sub)) return undefined;
    const type = json.typeOf(column, name);
    members.push(unless(`coalesce(${type}, 'null') = 'null'`, `${key(name)} || ${json.member(column, name)}`));
  }
  const rebuilt = members.length === 0 ? `'{}'` : `'{' || substr(${members.join(' || ')}, 2) || '}'`;
  // A value that is not an object is shown as it is, as toResource shows it.
  return `case when ${json.typeOf(column)} = 'object' then ${rebuilt} else ${json.text(column)} end`;
}

/** The JSON value of a field from its column, or undefined when SQL cannot render it exactly. */
function fieldJson(json: JsonSql, column: string, c: Column, f: FieldModel): string | undefined {
  if (c.kind === 'json') {
    if (f.type === 'object' && !f.repeated) return objectJson(json, column, f);
    return f.repeated && memberAsStored(f) ? json.text(column) : undefined;
  }
  if (f.repeated) return undefined;
  if (c.kind === 'boolean') return json.boolean(column);
  if (c.kind === 'int64') return json.value(`cast(${column} as text)`);
  return asStored.has(f.type) ? json.value(column) : undefined;
}

/**
 * The expression rendering r's answer from rows of these columns ([property, column]), or undefined when a
 * shown field cannot be rendered exactly. A field without a column is left out, as toResource leaves out an
 * absent property; so is a NULL column, or a JSON column holding null.
 */
export function answerJsonSql(
  json: JsonSql,
  r: ResourceModel,
  columns: readonly (readonly [string, Column])[],
): string | undefined {
  const at = new Map(columns);
  const uid = at.get('uid');
  if (!uid) return undefined;
  const parts = [`${literal('{"uid":')} || ${json.value(quoteIdentifier(uid.name))}`];
  for (const [name, f] of shownFields(r.fields)) {
    const c = at.get(name);
    if (!c) continue;
    const column = quoteIdentifier(c.name);
    const value = fieldJson(json, column, c, f);
    if (value === undefined) return undefined;
    const absent = c.kind === 'json' ? `coalesce(${json.typeOf(column)}, 'null') = 'null'` : `${column} is null`;
    parts.push(unless(absent, `${key(name)} || ${value}`));
  }
  for (const stamp of ['createTime', 'updateTime'] as const) {
    if (r.timestamps && !r.timestamps.includes(stamp)) continue;
    const c = at.get(stamp);
    // Shown even when NULL, as toResource shows it.
    if (c) parts.push(`${key(stamp)} || ${json.value(quoteIdentifier(c.name))}`);
  }
  return `${parts.join(' || ')} || '}'`;
}
