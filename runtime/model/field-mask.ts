// Field masks (AIP-134) for PATCH: which fields an update changes.
import type { FieldModel } from './api-model.js';
import { invalidArgument, type FieldViolation } from './errors.js';

export type FieldMask = { kind: 'fields'; paths: string[] } | { kind: 'replace' };

/** The query parameter an update's mask travels in, as the spec spells it and as the reference's clients do. */
export const updateMaskParameters = ['update_mask', 'updateMask'];

/** Parses update_mask; without one, the mask is the set of fields present in the body. */
export function parseFieldMask(
  raw: string | undefined,
  body: Record<string, unknown>,
  fields: Record<string, FieldModel>,
): FieldMask {
  if (raw === undefined || raw.trim() === '')
    return {
      kind: 'fields',
      paths: Object.keys(body).filter((k) => Object.hasOwn(fields, k) && !fields[k].outputOnly),
    };
  const paths = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (paths.length === 1 && paths[0] === '*') return { kind: 'replace' };
  const violations: FieldViolation[] = [];
  for (const path of paths) {
    const problem = checkPath(path, fields);
    if (problem) violations.push({ field: 'update_mask', description: `${path}: ${problem}` });
  }
  if (violations.length > 0) throw invalidArgument(violations);
  return { kind: 'fields', paths };
}

/**
 * A map key a path may name: not a name every object inherits (`constructor`, `toString`) nor one that reaches
 * an object's prototype (`__proto__`): applying the mask reads and writes plain objects by these names.
 */
const addressableKey = (key: string) => key !== '' && key !== 'prototype' && !(key in Object.prototype);

function checkPath(path: string, fields: Record<string, FieldModel>): string | undefined {
  if (path === '*') return '"*" cannot be combined with other paths';
  const [head, ...rest] = path.split('.');
  // Own, declared fields only: `fields.constructor` is Object's, not a field.
  const f = Object.hasOwn(fields, head) ? fields[head] : undefined;
  if (!f) return 'no such field';
  if (f.outputOnly) return 'field is output only';
  if (rest.length === 0) return undefined;
  if (f.type === 'object' && !f.repeated) return checkPath(rest.join('.'), f.fields ?? {});
  if (f.type === 'map' && !f.repeated) {
    if (!addressableKey(rest[0])) return `"${rest[0]}" cannot be addressed as a map key`;
    if (rest.length === 1) return undefined;
    const value = f.mapValue;
    if (value?.type === 'object' && !value.repeated) return checkPath(rest.slice(1).join('.'), value.fields ?? {});
    return 'cannot address inside this map value';
  }
  return 'cannot address inside this field';
}

/** The fields an update with this mask can change: the first segment of each path, or every field. */
export function maskedFields(mask: FieldMask, fields: Record<string, FieldModel>): string[] {
  return mask.kind === 'replace' ? Object.keys(fields) : [...new Set(mask.paths.map((p) => p.split('.', 1)[0]))];
}

/**
 * The record after the update. A mask path names a field (or a nested field with dots): it takes the body's
 * value, or is cleared when the body lacks it. "replace" sets every updatable field from the body.
 */
export function applyFieldMask(
  current: Record<string, unknown>,
  body: Record<string, unknown>,
  mask: FieldMask,
  fields: Record<string, FieldModel>,
): Record<string, unknown> {
  const next = copyOf(current) as Record<string, unknown>;
  const paths = mask.kind === 'replace' ? Object.keys(fields).filter((k) => !fields[k].outputOnly) : mask.paths;
  for (const path of paths) setPath(next, body, path.split('.'), fields);
  return next;
}

/**
 * A deep copy of a record's values (JSON's kinds: what a row and a body hold): nothing of the result is shared
 * with what it was copied from. A tenth of structuredClone's cost, which serializes and parses again.
 */
function copyOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOf);
  if (Object.getPrototypeOf(value) !== Object.prototype) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const v = copyOf((value as Record<string, unknown>)[key]);
    // A JSON body's own "__proto__" stays a member, as structuredClone keeps it, not the copy's prototype.
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: v, enumerable: true, writable: true, configurable: true });
    else copy[key] = v;
  }
  return copy;
}

function setPath(
  target: Record<string, unknown>,
  source: Record<string, unknown> | undefined,
  path: string[],
  fields: Record<string, FieldModel>,
) {
  const [head, ...rest] = path;
  // Own properties only, of the fields and of the body (parseFieldMask refused inherited names already).
  const f = Object.hasOwn(fields, head) ? fields[head] : undefined;
  const given = typeof source === 'object' && source !== null && Object.hasOwn(source, head);
  if (f?.outputOnly || (f?.immutable && rest.length === 0 && !given)) return;
  if (rest.length === 0) {
    if (given) target[head] = copyOf(source[head]);
    else delete target[head];
    return;
  }
  const child = ((Object.hasOwn(target, head) ? target[head] : undefined) ?? (target[head] = {})) as Record<
    string,
    unknown
  >;
  const from = given ? (source[head] as Record<string, unknown> | undefined) : undefined;
  setPath(child, from, rest, f?.type === 'object' ? (f.fields ?? {}) : {});
}
