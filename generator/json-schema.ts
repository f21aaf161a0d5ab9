// JSON Schemas derived from field declarations: one source for the AJV validators and the OpenAPI document.
import { maxPatternLength } from '../runtime/access/safe-pattern.js';
import type { FieldModel } from '../runtime/model/api-model.js';

export type SchemaMode =
  /** a request body: output-only fields tolerated and ignored, unknown fields rejected */
  | 'input'
  /** what the server returns: input-only fields absent */
  | 'output'
  /** a stored record, as the import loads it: every field allowed */
  | 'record';

export type JsonSchema = Record<string, unknown>;

const int32 = { minimum: -2147483648, maximum: 2147483647 };

/** The decimal numbers of as many digits as limit, up to limit: at each digit, a smaller one and anything after. */
function sameLengthUpTo(limit: string): string {
  const below = [...limit].flatMap((d, i) =>
    Number(d) > (i === 0 ? 1 : 0)
      ? [`${limit.slice(0, i)}[${i === 0 ? 1 : 0}-${Number(d) - 1}][0-9]{${limit.length - i - 1}}`]
      : [],
  );
  return [...below, limit].join('|');
}

/**
 * The int64 format: decimal text of a signed 64-bit integer, leading zeros allowed. 18 digits always fit; 19
 * digits up to 9223372036854775807, or 9223372036854775808 below zero.
 */
export const int64Text = `^(?:-0*(?:[0-9]{1,18}|${sameLengthUpTo('9223372036854775808')})|0*(?:[0-9]{1,18}|${sameLengthUpTo('9223372036854775807')}))$`;

/** Above 2^53 a JSON number has already lost digits when it is parsed: such values must come as strings. */
const safeInteger = { minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };

function scalarSchema(f: FieldModel, mode: SchemaMode): JsonSchema {
  switch (f.type) {
    case 'string': {
      const s: JsonSchema = { type: 'string' };
      if (f.pattern !== undefined) s.pattern = f.pattern;
      if (f.minLength !== undefined) s.minLength = f.minLength;
      if (f.maxLength !== undefined) s.maxLength = f.maxLength;
      // A pattern's shape is judged at run time (runtime/access/safe-pattern.ts); its length already here.
      if (f.regex) s.maxLength = Math.min(f.maxLength ?? maxPatternLength, maxPatternLength);
      return s;
    }
    case 'bool':
      return { type: 'boolean' };
    case 'int32':
      return { type: 'integer', ...int32, ...bounds(f) };
    // int64 travels as a JSON string (protojson); a JSON number is accepted on input while it is exact. Declared
    // bounds apply to numbers here and to strings in runtime/model/records.ts: a JSON Schema bound ignores strings.
    case 'int64':
      return mode === 'output'
        ? { type: 'string', format: 'int64' }
        : { type: ['string', 'integer'], format: 'int64', ...safeInteger, ...tighter(bounds(f)) };
    case 'double':
      return { type: 'number', ...bounds(f) };
    case 'timestamp':
      return { type: 'string', format: 'date-time' };
    case 'duration':
      return { type: 'string', pattern: '^-?[0-9]{1,12}(\\.[0-9]{1,9})?s$' };
    case 'enum':
      return { type: 'string', enum: f.values };
    case 'object':
      // A nested object given in a request or a record is given whole: its required fields too.
      return objectSchema(f.fields ?? {}, mode, mode !== 'output');
    case 'map':
      return { type: 'object', additionalProperties: fieldSchema(f.mapValue!, mode) };
  }
}

/** Declared bounds within the safe integers. */
function tighter(b: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  if (typeof b.minimum === 'number' && b.minimum > safeInteger.minimum) out.minimum = b.minimum;
  if (typeof b.maximum === 'number' && b.maximum < safeInteger.maximum) out.maximum = b.maximum;
  return out;
}

function bounds(f: FieldModel): JsonSchema {
  const b: JsonSchema = {};
  if (f.minimum !== undefined) b.minimum = f.minimum;
  if (f.maximum !== undefined) b.maximum = f.maximum;
  return b;
}

export function fieldSchema(f: FieldModel, mode: SchemaMode): JsonSchema {
  const s = scalarSchema(f, mode);
  if (mode === 'output' && f.description) s.description = f.description;
  if (mode === 'output' && f.outputOnly) s.readOnly = true;
  if (mode === 'output' && f.inputOnly) s.writeOnly = true;
  if (mode === 'output' && f.createOnly)
    s.description = [f.description, 'Only in the create response.'].filter(Boolean).join(' ');
  // A required repeated field needs at least one item.
  if (f.repeated)
    return mode !== 'output' && f.required ? { type: 'array', items: s, minItems: 1 } : { type: 'array', items: s };
  return s;
}

/**
 * The schema of an object with the given fields.
 * requireFields: whether fields marked required must be present (create and records, not updates).
 */
export function objectSchema(fields: Record<string, FieldModel>, mode: SchemaMode, requireFields: boolean): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [name, f] of Object.entries(fields)) {
    if (mode === 'output' && f.inputOnly) continue;
    // Set by the server and never returned (a hash, a kept issuer): no request may carry it.
    if (mode === 'input' && f.inputOnly && f.outputOnly) continue;
    // Output-only fields echoed back by read-modify-write clients are ignored, so any value passes.
    properties[name] = mode === 'input' && f.outputOnly ? {} : fieldSchema(f, mode);
    if (requireFields && f.required && !(mode === 'input' && f.outputOnly)) required.push(name);
  }
  const s: JsonSchema = { type: 'object', properties, additionalProperties: mode === 'output' };
  if (mode === 'output') delete s.additionalProperties;
  if (required.length > 0) s.required = required;
  return s;
}
