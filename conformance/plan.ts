// The conformance plan: what npm run generate derives from spec/ for the suite to run, per resource and rule.
import type { RpcRoute } from '../runtime/grpc/rpc.js';

export interface ResourcePlan {
  /** <domain>.<collection>, the prefix of every rule name of this resource */
  id: string;
  type: string;
  collection: string;
  /** /<domain>/v2/<path> */
  base: string;
  /** a list nested under its parent, with {parent} */
  listPath?: string;
  parent?: string;
  /** a record's uid is its parent's uid: one record per parent */
  uidIsParent: boolean;
  readOnly: boolean;
  operations: string[];
  /** a valid create body with the required fields */
  createBody: Record<string, unknown>;
  /** top-level plain string fields, which the suite varies to make records distinct */
  strings: string[];
  /** top-level string fields -> pattern, for making distinct valid values */
  patterns: Record<string, string>;
  required: string[];
  /** fields holding the uid of a record of another resource, which the suite creates first */
  references: Record<string, string>;
  /** values that break a declared pattern or enum */
  invalid: { field: string; value: unknown }[];
  outputOnly: string[];
  /** accepted on input, never returned */
  inputOnly: string[];
  /** shown by the create response alone */
  createOnly: string[];
  /** what makes a record one of its kind (`parent` and fields): a second create of it is ALREADY_EXISTS */
  naturalKey?: string[];
  /** two updatable fields with fresh values, for the mask rules */
  update?: { field: string; value: unknown; other: string; otherValue: unknown };
  /** order_by key -> JSON field */
  orderBy: Record<string, string>;
  /** filters on a field of the record, with the field's type for comparing values */
  filters: { param: string; field: string; match: string; type: string }[];
  /** child collections that block deleting a record of this resource */
  restrictingChildren: string[];
  /** creatable child collections whose records go with a deleted record of this resource */
  cascadingChildren: string[];
  /** scalar fields the suite sets on every record it makes, each record another value: those it orders or filters by, int64s */
  varied: Record<string, VariedField>;
  /** operation -> the capabilities it needs (none: any caller or any verified caller) */
  capabilities: Record<string, string[]>;
}

/** How to give each record a value of its own: numbers counted up from minimum, enums in turn, strings suffixed. */
export interface VariedField {
  type: 'string' | 'bool' | 'int32' | 'int64' | 'double' | 'timestamp' | 'enum';
  /** a valid value (strings: the base the suffix is added to) */
  base: unknown;
  values?: string[];
  minimum?: number;
  maximum?: number;
}

/** The value of a varied field for the nth record; int64s from 2^53 + 1 up, beyond what a double holds. */
export function variedValue(f: VariedField, n: number): unknown {
  switch (f.type) {
    case 'int64': {
      const v = 2n ** 53n + 1n + BigInt(n);
      return String(f.maximum !== undefined && v > BigInt(f.maximum) ? BigInt(f.minimum ?? 0) + BigInt(n) : v);
    }
    case 'int32':
    case 'double': {
      const low = f.minimum ?? 0;
      const span = (f.maximum ?? low + 1_000_000) - low + 1;
      return low + (n % span);
    }
    case 'bool':
      return n % 2 === 1;
    case 'enum': {
      const named = (f.values ?? []).filter((v) => !v.endsWith('_UNSPECIFIED'));
      return named.length > 0 ? named[n % named.length] : f.base;
    }
    case 'timestamp':
      return new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString();
    case 'string':
      return f.base;
  }
}

export interface PlannedRule {
  /** stable, e.g. registry.repos/list/page-token-bound-to-query */
  name: string;
  resource?: string;
  rule: string;
}

/** An HTTP route and the rpc serving the same operation, for running the rules over gRPC. */
export interface PlannedRpc extends Omit<RpcRoute, 'path'> {
  method: string;
  /** the HTTP path template, e.g. /registry/v2/repos/{uid} */
  path: string;
  /** anchored regular expression source matching the raw HTTP path, capturing the parameters in order */
  pattern: string;
  params: string[];
  /** the gRPC :path, /<package>.<Service>/<Rpc> */
  grpc: string;
}

/**
 * The fields a create can fail on together: required strings left out and patterned strings given a value their
 * pattern excludes; an undeclared enum name only when fewer than two remain (gRPC cannot carry one).
 */
export function failingFields(p: ResourcePlan): string[] {
  const strings = new Set([
    ...p.required.filter((f) => typeof p.createBody[f] === 'string'),
    ...p.invalid.filter((v) => typeof v.value === 'string' && p.patterns[v.field]).map((v) => v.field),
  ]);
  const more = p.invalid.filter((v) => !strings.has(v.field)).map((v) => v.field);
  return strings.size >= 2 ? [...strings] : [...strings, ...more];
}

export interface ConformancePlan {
  version: string;
  /**
   * The token exchange, when the API serves one (HTTP path, and the rpc where it has a token service): how the
   * suite gets tokens for identities it makes, as their issuer (the callers of the capability rules).
   */
  tokenExchange?: { path: string; rpc?: string };
  /** What the creator of a root group holds in it (the groups' creatorRole): what the suite may grant its callers. */
  grantable: string[];
  resources: ResourcePlan[];
  rules: PlannedRule[];
  /** in the routes' match order; an rpc may serve two routes (a create with and without its parent) */
  rpcs: PlannedRpc[];
}
