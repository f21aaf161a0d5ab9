// The generated AJV validators, and their errors as AIP-193 field violations.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { ErrorObject } from 'ajv';
import { invalidArgument, type FieldViolation } from '../model/errors.js';
import { patternProblem } from '../access/safe-pattern.js';
import type { FieldModel } from '../model/api-model.js';

export interface CompiledValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

export interface Validators {
  body(id: string): CompiledValidator | undefined;
  query(id: string): CompiledValidator | undefined;
}

const exportName = (id: string) => id.replace(/[^A-Za-z0-9]/g, '_');

export function loadValidators(generatedDir: string): Validators {
  const require = createRequire(import.meta.url);
  const bodies = require(resolve(join(generatedDir, 'validators/bodies.cjs'))) as Record<string, CompiledValidator>;
  const queries = require(resolve(join(generatedDir, 'validators/queries.cjs'))) as Record<string, CompiledValidator>;
  return { body: (id) => bodies[exportName(id)], query: (id) => queries[exportName(id)] };
}

function fieldPath(e: ErrorObject): string {
  const base = e.instancePath.slice(1).split('/').filter(Boolean).join('.');
  const child =
    e.keyword === 'required'
      ? e.params.missingProperty
      : e.keyword === 'additionalProperties'
        ? e.params.additionalProperty
        : e.keyword === 'propertyNames'
          ? e.params.propertyName
          : undefined;
  return [base, child].filter(Boolean).join('.') || '(body)';
}

const formats: Record<string, string> = {
  'date-time': 'an RFC 3339 timestamp',
  int64: 'an int64: a decimal integer from -9223372036854775808 to 9223372036854775807',
};

function description(e: ErrorObject, field: string): string {
  switch (e.keyword) {
    case 'required':
      return `${field} is required`;
    case 'additionalProperties':
      return `${field} is not a known field`;
    // Query validators list the parameters a call takes (propertyNames) and refuse those of the reference it
    // does not serve (a false schema).
    case 'propertyNames':
      return notAParameter(field);
    case 'false schema':
      return `${field} is not supported by this server`;
    case 'pattern':
      return `${field} must match "${e.params.pattern}"`;
    case 'enum':
      return `${field} must be one of ${(e.params.allowedValues as string[]).join(', ')}`;
    case 'type':
      return `${field} must be of type ${[e.params.type].flat().join(' or ')}`;
    case 'format':
      return `${field} must be ${formats[e.params.format] ?? `a ${e.params.format}`}`;
    case 'minimum':
    case 'maximum':
      // The bound of every int64 number (generator/json-schema.ts): beyond it a JSON number is no longer exact.
      if (Math.abs(e.params.limit) === Number.MAX_SAFE_INTEGER)
        return `${field} must be sent as a string: a JSON number beyond 2^53 is not exact`;
      return `${field} must be ${e.params.comparison} ${e.params.limit}`;
    case 'maxLength':
      return `${field} must be at most ${e.params.limit} characters`;
    case 'minLength':
      return `${field} must be at least ${e.params.limit} characters`;
    default:
      return `${field} ${e.message}`;
  }
}

/** Enough to fix a request by; a list of 100,000 bad items would otherwise take seconds to describe. */
export const maxViolations = 20;

export function violationsOf(errors: ErrorObject[], paramNames?: Record<string, string>): FieldViolation[] {
  const seen = new Set<string>();
  const out: FieldViolation[] = [];
  for (const e of errors) {
    if (out.length >= maxViolations) break;
    // A property name's own failure is reported once, by the propertyNames error that follows it.
    if (e.keyword === 'if' || e.propertyName !== undefined) continue;
    let field = fieldPath(e);
    if (paramNames?.[field]) field = paramNames[field];
    const v = { field, description: description(e, field) };
    const key = `${v.field}\n${v.description}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(v);
    }
  }
  return out;
}

const notAParameter = (name: string) => `${name} is not a parameter of this call`;

/** Refuses, by name, every query parameter a hand-written call does not take: none is ever ignored. */
export function checkParameterNames(
  query: Record<string, unknown>,
  takes: readonly string[] = [],
  /** the reference's parameters of the call that this server does not serve */
  notServed: readonly string[] = [],
): void {
  const unknown = Object.keys(query).filter((name) => !takes.includes(name));
  if (unknown.length > 0)
    throw invalidArgument(
      unknown.map((field) => ({
        field,
        description: notServed.includes(field) ? `${field} is not supported by this server` : notAParameter(field),
      })),
    );
}

/** Validates data, throwing INVALID_ARGUMENT with one violation per failed field. */
export function check(validator: CompiledValidator, data: unknown): void {
  if (!validator(data)) throw invalidArgument(violationsOf(validator.errors ?? []));
}

/** The regular expressions (fields declared `regex`) a body holds that could backtrack without bound. */
function patternViolations(fields: Record<string, FieldModel>, data: unknown, at: string): FieldViolation[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const out: FieldViolation[] = [];
  for (const [name, value] of Object.entries(data)) {
    const f = Object.hasOwn(fields, name) ? fields[name] : undefined;
    const path = `${at}${name}`;
    const judge = (v: unknown, field: string) => {
      const problem = typeof v === 'string' ? patternProblem(v) : undefined;
      if (problem) out.push({ field, description: `${field} is not an accepted regular expression: ${problem}` });
    };
    if (f?.regex) judge(value, path);
    else if (f?.type === 'map' && f.mapValue?.regex && typeof value === 'object' && value !== null)
      for (const [k, v] of Object.entries(value)) judge(v, `${path}.${k}`);
    else if (f?.type === 'object' && f.fields) out.push(...patternViolations(f.fields, value, `${path}.`));
  }
  return out;
}

/** Refuses a body holding a regular expression the server could not run safely (runtime/access/safe-pattern.ts). */
export function checkPatterns(fields: Record<string, FieldModel>, data: unknown): void {
  const violations = patternViolations(fields, data, '').slice(0, maxViolations);
  if (violations.length > 0) throw invalidArgument(violations);
}
