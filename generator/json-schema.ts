// JSON Schemas derived from field declarations: one source for the AJV validators and the OpenAPI document.
import type { FieldModel } from '../runtime/model.js';

export type SchemaMode =
  /** a request body: output-only fields tolerated and ignored, unknown fields rejected */
  | 'input'
  /** what the server returns: input-only fields absent */
  | 'output'
  /** a stored record, as the import loads it: every field allowed */
  | 'record';

export type JsonSchema = Record<string, unknown>;

const int32 = { minimum: -2147483648, maximum: 2147483647 };

function scalarSchema(f: FieldModel, mode: SchemaMode): JsonSchema {
  switch (f.type) {
    case 'string': {
      const s: JsonSchema = { type: 'string' };
      if (f.pattern !== undefined) s.pattern = f.pattern;
      if (f.minLength !== undefined) s.minLength = f.minLength;
      if (f.maxLength !== undefined) s.maxLength = f.maxLength;
      return s;
    }
    case 'bool': return { type: 'boolean' };
    case 'int32': return { type: 'integer', ...int32, ...bounds(f) };
    // int64 travels as a JSON string (protojson); a JSON number is accepted on input.
    case 'int64': return mode === 'output'
      ? { type: 'string', format: 'int64' }
      : { type: ['string', 'integer'], pattern: '^-?[0-9]{1,19}$' };
    case 'double': return { type: 'number', ...bounds(f) };
    case 'timestamp': return { type: 'string', format: 'date-time' };
    case 'duration': return { type: 'string', pattern: '^-?[0-9]{1,12}(\\.[0-9]{1,9})?s$' };
    case 'enum': return { type: 'string', enum: f.values };
    case 'object': return objectSchema(f.fields ?? {}, mode, false);
    case 'map': return { type: 'object', additionalProperties: fieldSchema(f.mapValue!, mode) };
  }
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
  if (mode === 'output' && f.createOnly) s.description = [f.description, 'Only in the create response.'].filter(Boolean).join(' ');
  // A required repeated field needs at least one item.
  if (f.repeated) return mode !== 'output' && f.required ? { type: 'array', items: s, minItems: 1 } : { type: 'array', items: s };
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
    // Output-only fields echoed back by read-modify-write clients are ignored, so any value passes.
    properties[name] = mode === 'input' && f.outputOnly ? {} : fieldSchema(f, mode);
    if (requireFields && f.required && !(mode === 'input' && f.outputOnly)) required.push(name);
  }
  const s: JsonSchema = { type: 'object', properties, additionalProperties: mode === 'output' };
  if (mode === 'output') delete s.additionalProperties;
  if (required.length > 0) s.required = required;
  return s;
}
