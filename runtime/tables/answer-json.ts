// A resource's answer as JSON text, rendered by the database in the statement that reads its row: the members
// JSON.stringify(toResource(record)) writes, in the same order, with the same values, without a row of values,
// an object and a serialisation in between. A page of 50 repos costs about 110 µs of CPU read as values, shaped
// and serialised, and about 60 µs rendered so. Only fields whose answer is their stored value in another
// spelling are rendered by SQL; a resource with another kind of field (a map, a double, an object holding such
// a field) has no SQL answer and is shaped in JavaScript (runtime/tables/answer-shape.ts).
import { createHash } from 'node:crypto';
import { quoteIdentifier, type Column, type JsonSql } from '../storage/dialect.js';
import type { FieldModel, ResourceModel } from '../model/api-model.js';
import { outputObject, shownFields, type Row } from '../model/records.js';

/** Field types whose answer is the stored value itself (int64 is shown as decimal text, objects are rebuilt). */
const asStored = new Set<FieldModel['type']>(['string', 'enum', 'timestamp', 'duration', 'int32', 'bool']);

/** A SQL string literal of this text. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** `,"name":` as a SQL literal: every member but the uid follows another. */
const key = (name: string) => literal(`,${JSON.stringify(name)}:`);

/** JSON text, NULL when it is JSON's null: an unset value, left out of the answer. */
const unlessNull = (json: string) => `nullif(${json}, 'null')`;

/**
 * Objects kept as they are shown. An object whose members are all shown as stored (a repo's sync_config) is
 * written in its fields' order, unset members left out, followed by a mark in JSON's own whitespace (which every
 * JSON reader passes over) that names the object's shape: a read takes such a value as it is, where it would
 * rebuild it from each member (eight `->` lookups for a sync_config, a tenth of a get's CPU). The mark travels with
 * the row: a value written without it (by an older version, a data migration, a server of another spec on the same
 * file) or under another shape (a member since removed, or made input-only) is rebuilt, as every value was.
 */
const markLength = 24;
const shownFormVersion = 1;
const marks = new WeakMap<FieldModel, string | null>();

/** A member's value JSON writes as it is: text, a finite number, a boolean, or a list of them (never a Date or NaN). */
const plainJson = (v: unknown): boolean =>
  typeof v === 'string' ||
  typeof v === 'boolean' ||
  (typeof v === 'number' && Number.isFinite(v)) ||
  (Array.isArray(v) && v.every(plainJson));

/** The mark of f's shape: 24 of JSON's four whitespace characters from a hash of its members; null if not kept so. */
export function shapeMark(f: FieldModel): string | null {
  let mark = marks.get(f);
  if (mark === undefined) {
    const members = Object.entries(f.fields ?? {});
    mark = null;
    if (f.type === 'object' && !f.repeated && members.every(([, sub]) => !sub.inputOnly && asStored.has(sub.type))) {
      // With the version of the shown form: a build that showed a type otherwise would take these rows as stored.
      const hash = createHash('sha256')
        .update(JSON.stringify([shownFormVersion, members.map(([name, sub]) => [name, sub.type, !!sub.repeated])]))
        .digest();
      mark = Array.from({ length: markLength }, (_, i) => ' \t\n\r'[(hash[i >> 2] >> ((i & 3) * 2)) & 3]).join('');
    }
    marks.set(f, mark);
  }
  return mark;
}

/**
 * The text an object field's column stores for this value where the database renders answers: its shown form and
 * the shape's mark when f is kept as shown and the value holds only members f shows; undefined otherwise (stored
 * as it is: a member the spec no longer has is kept, and the read rebuilds it).
 */
export function storedAsShown(f: FieldModel, value: unknown): string | undefined {
  const mark = shapeMark(f);
  if (mark === null || typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const fields = f.fields ?? {};
  if (!Object.keys(value).every((name) => Object.hasOwn(fields, name))) return undefined;
  const shown = outputObject(value as Row, fields);
  return Object.values(shown).every(plainJson) ? JSON.stringify(shown) + mark : undefined;
}

/**
 * The JSON of an object column: rebuilt from its shown members, in the field's order, unset ones left out, as
 * toResource shows it; a value that is not an object as it is. NULL when unset. A value stored with its shape's
 * mark is taken as it is, the mark cut off.
 */
function objectJson(json: JsonSql, column: string, f: FieldModel): string | undefined {
  const members: string[] = [];
  for (const [name, sub] of shownFields(f.fields ?? {})) {
    if (!asStored.has(sub.type)) return undefined;
    members.push(`${key(name)} || ${unlessNull(json.member(column, name))}`);
  }
  const rebuilt = members.length === 0 ? `'{}'` : `'{' || substr(concat(${members.join(', ')}), 2) || '}'`;
  const mark = shapeMark(f);
  const asShown =
    mark === null
      ? ''
      : `when substr(${column}, -${markLength}) = ${literal(mark)} then substr(${column}, 1, length(${column}) - ${markLength}) `;
  return `case ${asShown}when ${json.isObject(column)} then ${rebuilt} else ${unlessNull(column)} end`;
}

/**
 * A field's member of the answer (`,"name":value`) from its column, NULL when the answer leaves it out;
 * undefined when SQL cannot render it exactly.
 */
function memberJson(json: JsonSql, name: string, column: string, c: Column, f: FieldModel): string | undefined {
  let value: string | undefined;
  if (c.kind === 'json') {
    // JSON text as stored (always JSON.stringify's, runtime/storage/dialect.ts): a list of scalars is shown as it is.
    if (f.type === 'object' && !f.repeated) value = objectJson(json, column, f);
    else if (f.repeated && asStored.has(f.type)) value = unlessNull(column);
    return value && `${key(name)} || ${value}`;
  }
  if (f.repeated) return undefined;
  if (c.kind === 'boolean') value = json.boolean(column);
  else if (c.kind === 'int64') value = json.value(`cast(${column} as text)`);
  else if (asStored.has(f.type)) value = json.value(column);
  return value && `case when ${column} is not null then ${key(name)} || ${value} end`;
}

/**
 * The expression rendering r's answer from rows of these columns ([property, column]), or undefined when a
 * shown field cannot be rendered exactly; NULL for a row where a JSON column it cannot render is set. A field
 * without a column is left out, as toResource leaves out an
 * absent property; so is a NULL column, or a JSON column holding null. Members that are NULL vanish in
 * concat(), which also makes the text once instead of once per `||`.
 */
export function answerJsonSql(
  json: JsonSql,
  r: ResourceModel,
  columns: readonly (readonly [string, Column])[],
): string | undefined {
  const at = new Map(columns);
  const uid = at.get('uid');
  if (!uid) return undefined;
  const parts = [literal('{"uid":'), json.value(quoteIdentifier(uid.name))];
  // An optional object SQL cannot render (one holding maps or lists of objects, as a repo's customOverlay): the
  // answer is rendered for rows where it is unset, and NULL where it is set, for the caller to shape that row in
  // JavaScript. A map or list column is most often set: its resource is shaped in JavaScript throughout.
  const unset: string[] = [];
  for (const [name, f] of shownFields(r.fields)) {
    const c = at.get(name);
    if (!c) continue;
    const column = quoteIdentifier(c.name);
    const member = memberJson(json, name, column, c, f);
    if (member === undefined && c.kind === 'json' && f.type === 'object' && !f.repeated)
      unset.push(`(${column} is null or ${column} = 'null')`);
    else if (member === undefined) return undefined;
    else parts.push(member);
  }
  for (const stamp of ['createTime', 'updateTime'] as const) {
    if (r.timestamps && !r.timestamps.includes(stamp)) continue;
    const c = at.get(stamp);
    // Shown even when NULL, as toResource shows it.
    if (c) parts.push(key(stamp), json.value(quoteIdentifier(c.name)));
  }
  const rendered = `concat(${parts.join(', ')}, '}')`;
  return unset.length === 0 ? rendered : `case when ${unset.join(' and ')} then ${rendered} end`;
}
