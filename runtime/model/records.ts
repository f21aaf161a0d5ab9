// Between stored records and JSON: what a request may write and what a response shows.
import { invalidArgument } from './errors.js';
import type { FieldModel, ResourceModel } from './api-model.js';

export type Row = Record<string, unknown>;

/** The model of one element of a repeated field, made once per field. */
const elements = new WeakMap<FieldModel, FieldModel>();
function elementOf(f: FieldModel): FieldModel {
  let element = elements.get(f);
  if (!element) elements.set(f, (element = { ...f, repeated: false }));
  return element;
}

/** A value as the client sees it: input-only fields removed, unset fields omitted. */
export function outputValue(value: unknown, f: FieldModel): unknown {
  if (value === null || value === undefined) return undefined;
  if (f.repeated && Array.isArray(value)) {
    const element = elementOf(f);
    return value.map((v) => outputValue(v, element));
  }
  if (f.type === 'object' && typeof value === 'object') return outputObject(value as Row, f.fields ?? {});
  if (f.type === 'map' && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Row).map(([k, v]) => [k, outputValue(v, f.mapValue!)]));
  }
  if (f.type === 'int64') return String(value);
  return value;
}

/** Each field set's fields, listed once: every write walks them, several times. */
const fieldLists = new WeakMap<Record<string, FieldModel>, [string, FieldModel][]>();

export function fieldList(fields: Record<string, FieldModel>): [string, FieldModel][] {
  let list = fieldLists.get(fields);
  if (!list) fieldLists.set(fields, (list = Object.entries(fields)));
  return list;
}

/** Each field set's fields that a response shows, listed once: every row of every answer walks them. */
const shownLists = new WeakMap<Record<string, FieldModel>, [string, FieldModel][]>();

export function shownFields(fields: Record<string, FieldModel>): [string, FieldModel][] {
  let list = shownLists.get(fields);
  if (!list) shownLists.set(fields, (list = Object.entries(fields).filter(([, f]) => !f.inputOnly)));
  return list;
}

/** The fields' JSON form, added to `out`. */
function addOutput(out: Row, row: Row, fields: Record<string, FieldModel>): Row {
  for (const [name, f] of shownFields(fields)) {
    const v = row[name];
    if (v === null || v === undefined) continue;
    out[name] = outputValue(v, f);
  }
  return out;
}

export function outputObject(row: Row, fields: Record<string, FieldModel>): Row {
  return addOutput({}, row, fields);
}

/** The stored properties toResource reads: a list need select no other column. */
export function resourceProperties(r: ResourceModel): string[] {
  return ['uid', ...shownFields(r.fields).map(([name]) => name), 'createTime', 'updateTime'];
}

/** The JSON form of a stored row, built as one object (this runs for every row of every page). */
export function toResource(row: Row, r: ResourceModel): Row {
  const resource = addOutput({ uid: row.uid }, row, r.fields);
  if (!r.timestamps || r.timestamps.includes('createTime')) resource.createTime = row.createTime;
  if (!r.timestamps || r.timestamps.includes('updateTime')) resource.updateTime = row.updateTime;
  return resource;
}

/**
 * A validated body reduced to what may be stored, int64 as canonical decimal text. Output-only fields are
 * dropped from requests and kept from imported records (`source: 'record'`). `at` is the path of the body.
 */
export function inputObject(
  body: Row,
  fields: Record<string, FieldModel>,
  source: 'request' | 'record' = 'request',
  at = '',
): Row {
  const out: Row = {};
  for (const [name, f] of fieldList(fields)) {
    if ((f.outputOnly && source === 'request') || !(name in body) || body[name] === null) continue;
    out[name] = inputValue(body[name], f, source, at ? `${at}.${name}` : name);
  }
  return out;
}

function inputValue(value: unknown, f: FieldModel, source: 'request' | 'record', at: string): unknown {
  if (f.repeated && Array.isArray(value))
    return value.map((v, i) => inputValue(v, { ...f, repeated: false }, source, `${at}[${i}]`));
  if (f.type === 'object') return inputObject(value as Row, f.fields ?? {}, source, at);
  if (f.type === 'map')
    return Object.fromEntries(
      Object.entries(value as Row).map(([k, v]) => [k, inputValue(v, f.mapValue!, source, `${at}.${k}`)]),
    );
  if (f.type === 'int64') return int64Value(value as string | number, f, at);
  if (f.type === 'timestamp') return canonicalTimestamp(value as string);
  return value;
}

/**
 * An int64 (validated: a safe integer, or decimal text in the int64 range) as canonical text, within the
 * field's declared bounds: the validators check those for numbers only, as a JSON Schema bound ignores text.
 */
function int64Value(value: string | number, f: FieldModel, at: string): string {
  const n = BigInt(value);
  if (
    (f.minimum !== undefined && n < BigInt(Math.ceil(f.minimum))) ||
    (f.maximum !== undefined && n > BigInt(Math.floor(f.maximum)))
  ) {
    const range = [
      f.minimum !== undefined ? `at least ${f.minimum}` : '',
      f.maximum !== undefined ? `at most ${f.maximum}` : '',
    ]
      .filter(Boolean)
      .join(' and ');
    throw invalidArgument([{ field: at, description: `${at} must be ${range}` }]);
  }
  return n.toString();
}

/** Timestamps are stored in one form (UTC, milliseconds) so that text order is time order. */
export function canonicalTimestamp(value: string): string {
  return new Date(value).toISOString();
}

/** Declared defaults for fields the body leaves out; fields set on create take the record's create time. */
export function withDefaults(data: Row, fields: Record<string, FieldModel>, createTime: string): Row {
  // Not `{ ...data }`: on Node 20 an object spread and then given a property it lacked costs 2-3 µs, a write's
  // largest single step (Object.assign: 0.1). data's keys are the model's field names (inputObject's).
  const out = Object.assign({}, data);
  for (const [name, f] of fieldList(fields)) {
    if (f.setOnCreate) out[name] = createTime;
    else if (out[name] === undefined && f.default !== undefined) out[name] = structuredClone(f.default);
  }
  return out;
}

let lastMs = NaN;
let lastText = '';
/** The current second's text up to its milliseconds ("2026-11-28T10:40:45."), and which second it is. */
let secondText = '';
let second = NaN;

/**
 * RFC 3339 UTC with millisecond precision. Made once per millisecond (a write asks two or three times), and then
 * from the second's text: Date's toISOString costs about a microsecond, which every write paid.
 */
export function now(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    const s = Math.floor(ms / 1000);
    if (s !== second) {
      secondText = new Date(s * 1000).toISOString().slice(0, 20);
      second = s;
    }
    const frac = ms - s * 1000;
    lastText = `${secondText}${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}Z`;
    lastMs = ms;
  }
  return lastText;
}

/**
 * The stored record type of each collection, by collection name. Empty here: the generated types of the served
 * spec (generated/types.ts) fill it in by declaration merging, so the runtime compiles and runs for any spec.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by declaration merging
export interface RecordTypes {}

/** Each collection's resource type, as the API shows it: filled in by generated/types.ts like RecordTypes. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by declaration merging
export interface ResourceTypes {}
