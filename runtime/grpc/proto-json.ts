// The proto3 JSON mapping, both ways, over protobufjs reflection: what the pipeline reads and writes is the same
// JSON as HTTP's (JSON names, RFC 3339 timestamps, int64 as strings, enum names), so gRPC adds no second shape.
import protobuf from 'protobufjs';
import { invalidArgument } from '../model/errors.js';
import { lowerCamelCase as lowerCamel } from '../model/field-names.js';
import type { Row } from '../model/records.js';

/** The JSON name of a field: its json_name, else the lowerCamelCase of its name. */
export function jsonName(f: protobuf.Field): string {
  return (f.options?.json_name as string | undefined) ?? lowerCamel(f.name);
}

const nanosText = (nanos: number) => (nanos ? `.${String(nanos).padStart(9, '0').replace(/0+$/, '')}` : '');

type Wire = { seconds?: string | number; nanos?: number };

function timestampText(v: Wire, field: string): string {
  const ms = Number(v.seconds ?? 0) * 1000 + Math.floor((v.nanos ?? 0) / 1e6);
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) throw invalidArgument([{ field, description: 'not a valid timestamp' }]);
  return d.toISOString();
}

function timestampWire(text: unknown): Wire | undefined {
  const ms = typeof text === 'string' ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) return undefined;
  return { seconds: String(Math.floor(ms / 1000)), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
}

function durationWire(text: unknown): Wire | undefined {
  const m = typeof text === 'string' ? /^(-?\d+)(?:\.(\d{1,9}))?s$/.exec(text) : null;
  if (!m) return undefined;
  return { seconds: m[1], nanos: Number((m[2] ?? '').padEnd(9, '0')) * (m[1].startsWith('-') ? -1 : 1) };
}

/** A decoded message (protobufjs toObject form, proto names) as proto3 JSON. */
export function toJson(type: protobuf.Type, message: Row, path = ''): Row {
  const out: Row = {};
  for (const f of type.fieldsArray) {
    const v = message[f.name];
    if (v === undefined || v === null) continue;
    const at = path ? `${path}.${f.name}` : f.name;
    if (f.map) {
      const entries = Object.entries(v as Row).map(([k, x]) => [k, valueToJson(f, x, `${at}.${k}`)]);
      out[jsonName(f)] = Object.fromEntries(entries);
    } else if (f.repeated) out[jsonName(f)] = (v as unknown[]).map((x, i) => valueToJson(f, x, `${at}[${i}]`));
    else out[jsonName(f)] = valueToJson(f, v, at);
  }
  return out;
}

function valueToJson(f: protobuf.Field, v: unknown, at: string): unknown {
  const t = f.resolvedType;
  if (!(t instanceof protobuf.Type)) return v;
  switch (t.fullName) {
    case '.google.protobuf.Timestamp':
      return timestampText(v as Wire, at);
    case '.google.protobuf.Duration': {
      const w = v as Wire;
      return `${w.seconds ?? 0}${nanosText(Math.abs(w.nanos ?? 0))}s`;
    }
    case '.google.protobuf.FieldMask':
      return ((v as { paths?: string[] }).paths ?? []).join(',');
    default:
      return toJson(t, v as Row, at);
  }
}

/** proto3 JSON (our answers) as a protobufjs fromObject input; JSON keys the message lacks are left out. */
export function fromJson(type: protobuf.Type, json: Row): Row {
  const out: Row = {};
  for (const f of type.fieldsArray) {
    const v = json[jsonName(f)] ?? json[f.name];
    if (v === undefined || v === null) continue;
    if (f.map) out[f.name] = Object.fromEntries(Object.entries(v as Row).map(([k, x]) => [k, valueFromJson(f, x)]));
    else if (f.repeated) out[f.name] = Array.isArray(v) ? v.map((x) => valueFromJson(f, x)) : [];
    else out[f.name] = valueFromJson(f, v);
  }
  return out;
}

function valueFromJson(f: protobuf.Field, v: unknown): unknown {
  const t = f.resolvedType;
  if (t instanceof protobuf.Enum) return typeof v === 'string' && v in t.values ? v : undefined;
  if (!(t instanceof protobuf.Type)) return v;
  switch (t.fullName) {
    case '.google.protobuf.Timestamp':
      return timestampWire(v);
    case '.google.protobuf.Duration':
      return durationWire(v);
    default:
      return typeof v === 'object' ? fromJson(t, v as Row) : undefined;
  }
}

/** Decodes a request: malformed bytes are the caller's error, never a crash. */
export function decodeRequest(type: protobuf.Type, bytes: Buffer): Row {
  let message: protobuf.Message;
  try {
    message = type.decode(bytes);
  } catch (e) {
    throw invalidArgument([
      {
        field: '(message)',
        description: `not a valid ${type.name}: ${e instanceof Error ? e.message : 'undecodable'}`,
      },
    ]);
  }
  const plain = type.toObject(message, { longs: String, enums: String, bytes: String });
  return toJson(type, plain as Row);
}

export function encodeResponse(type: protobuf.Type, json: Row): Buffer {
  return Buffer.from(type.encode(type.fromObject(fromJson(type, json))).finish());
}
