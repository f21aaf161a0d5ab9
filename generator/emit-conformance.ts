// The conformance plan: for each resource, valid and invalid inputs derived from its fields and the rules
// that apply to it, named stably so that results can be compared across runs and implementations.
import {
  failingFields,
  type ConformancePlan,
  type PlannedRpc,
  type PlannedRule,
  type ResourcePlan,
} from '../conformance/plan.js';
import type { ApiModel, FieldModel, ResourceModel } from '../runtime/model/api-model.js';
import type { RpcDecl } from './proto-model.js';
import { v2Routes, type Route } from './routes-table.js';
import { SpecError } from './spec.js';

const candidates = [
  'conformance',
  'conformance-check',
  'https://conformance.example/hook',
  `sha256:${'0'.repeat(64)}`,
  '000000000000',
  'c0nformance',
];

/** A valid value for a field: its example, or a simple one that satisfies its declaration. */
function exampleValue(f: FieldModel, where: string, problems: string[]): unknown {
  if (f.example !== undefined) {
    if (f.pattern && (typeof f.example !== 'string' || !new RegExp(f.pattern, 'u').test(f.example))) {
      problems.push(`${where}: example ${JSON.stringify(f.example)} does not match the pattern`);
    }
    return f.example;
  }
  const one = (): unknown => {
    switch (f.type) {
      case 'string': {
        const found = candidates.find(
          (c) =>
            (!f.pattern || new RegExp(f.pattern, 'u').test(c)) &&
            c.length >= (f.minLength ?? 0) &&
            c.length <= (f.maxLength ?? Infinity),
        );
        if (found === undefined) problems.push(`${where}: needs an example (no simple value matches ${f.pattern})`);
        return found;
      }
      case 'bool':
        return true;
      case 'int32':
      case 'double':
        return f.minimum ?? 1;
      case 'int64':
        return '1';
      case 'timestamp':
        return '2026-01-01T00:00:00.000Z';
      case 'duration':
        return '3600s';
      case 'enum':
        return f.values!.find((v) => !v.endsWith('_UNSPECIFIED')) ?? f.values![0];
      case 'object':
        return requiredBody(f.fields ?? {}, where, problems);
      case 'map':
        return {};
    }
  };
  const v = one();
  return f.repeated ? [v] : v;
}

function requiredBody(fields: Record<string, FieldModel>, where: string, problems: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(fields)) {
    // An optional field with a declared example is filled too: the record the rules expect to see has it.
    if ((f.required || f.example !== undefined) && !f.outputOnly)
      body[name] = exampleValue(f, `${where}.${name}`, problems);
  }
  return body;
}

function invalidValue(f: FieldModel): unknown {
  if (f.type === 'enum') return 'NOT_A_DECLARED_VALUE';
  if (f.type === 'string' && f.pattern) {
    const re = new RegExp(f.pattern, 'u');
    return ['Not Valid!', '', ' ', '\u00e9\u00e9'].find((c) => !re.test(c));
  }
  return undefined;
}

const updateValues = ['conformance-updated', 'conformance-other'];

/** A string field an update may set to either update value. */
function isUpdatable(f: FieldModel): boolean {
  return (
    f.type === 'string' &&
    !f.references &&
    !f.repeated &&
    !f.outputOnly &&
    !f.inputOnly &&
    !f.immutable &&
    updateValues.every((v) => !f.pattern || new RegExp(f.pattern, 'u').test(v))
  );
}

function plan(r: ResourceModel, model: ApiModel, problems: string[]): ResourcePlan {
  const where = `spec: resource ${r.collection}`;
  const createBody = r.operations.create ? requiredBody(r.fields, `${where}: /fields`, problems) : {};
  // Optional fields first: clearing them is what full replacement must do.
  const pair = Object.entries(r.fields)
    .filter(([, f]) => isUpdatable(f))
    .sort(([, a], [, b]) => Number(!!a.required) - Number(!!b.required))
    .map(([k]) => k);
  return {
    id: `${r.domain}.${r.collection}`,
    type: r.type,
    collection: r.collection,
    base: `/${r.domain}/${model.version}/${r.path}`,
    listPath: r.listPath && `/${r.domain}/${model.version}/${r.listPath}`,
    parent: r.parent,
    uidIsParent: r.uid === 'parent',
    readOnly: r.readOnly,
    operations: Object.keys(r.operations).sort(),
    createBody,
    strings: Object.entries(r.fields)
      .filter(([, f]) => f.type === 'string' && !f.repeated)
      .map(([k]) => k),
    patterns: Object.fromEntries(
      Object.entries(r.fields)
        .filter(([, f]) => f.type === 'string' && f.pattern)
        .map(([k, f]) => [k, f.pattern!]),
    ),
    required: Object.entries(r.fields)
      .filter(([, f]) => f.required && !f.outputOnly)
      .map(([k]) => k),
    references: Object.fromEntries(
      Object.entries(r.fields)
        .filter(([, f]) => f.references)
        .map(([k, f]) => [k, f.references!]),
    ),
    invalid: Object.entries(r.fields)
      .filter(([, f]) => !f.outputOnly && !f.repeated && invalidValue(f) !== undefined)
      .map(([field, f]) => ({ field, value: invalidValue(f) })),
    outputOnly: Object.entries(r.fields)
      .filter(([, f]) => f.outputOnly)
      .map(([k]) => k),
    inputOnly: Object.entries(r.fields)
      .filter(([, f]) => f.inputOnly)
      .map(([k]) => k),
    createOnly: Object.entries(r.fields)
      .filter(([, f]) => f.createOnly)
      .map(([k]) => k),
    ...(r.naturalKey ? { naturalKey: r.naturalKey } : {}),
    update:
      pair.length >= 2
        ? { field: pair[0], value: updateValues[0], other: pair[1], otherValue: updateValues[1] }
        : undefined,
    orderBy: Object.fromEntries(Object.entries(r.orderBy).map(([k, field]) => [k, field])),
    // Filters on a field of the record: the suite checks them on the records it makes.
    filters: r.filters.flatMap(({ param, field, match }) =>
      (match === 'exact' || match === 'anyOf') && field && field !== 'parent' ? [{ param, field, match }] : [],
    ),
    restrictingChildren: r.children.filter(
      (c) => model.resources[c].onParentDelete === 'restrict' && model.resources[c].operations.create,
    ),
  };
}

function createRules(p: ResourcePlan): string[] {
  return [
    'create/returns-resource',
    'create/ignores-output-only',
    ...p.required.map((f) => `create/requires-${f}`),
    ...p.invalid.map((v) => `create/rejects-invalid-${v.field}`),
    ...Object.keys(p.patterns)
      .filter((f) => !p.outputOnly.includes(f) && !p.references[f])
      .map((f) => `create/pattern-excludes-${f}`),
    ...(failingFields(p).length >= 2 ? ['create/one-violation-per-field'] : []),
    ...(p.naturalKey?.every((f) => f === 'parent' || p.createBody[f] !== undefined)
      ? ['create/natural-key-taken-once']
      : []),
  ];
}

/** Rules that need records of the suite's own: paging walks, orders, skip, tokens, hierarchy and filters. */
function listRulesWithRecords(p: ResourcePlan): string[] {
  return [
    'list/page-walk-size-1',
    'list/page-walk-size-7',
    'list/exact-last-page',
    // 201 records in one scope: not where each record needs a parent of its own.
    ...(p.uidIsParent ? [] : ['list/page-size-default', 'list/page-size-max']),
    ...(p.operations.includes('delete') && !p.uidIsParent ? ['list/fresh-after-writes'] : []),
    ...Object.keys(p.orderBy).flatMap((key) => [`list/order-by-${key}`, `list/order-by-${key}-desc`]),
    'list/skip',
    'list/page-token-bound-to-query',
    'list/page-token-tamper-rejected',
    ...(p.parent === 'groups' && !p.uidIsParent ? ['list/children-of-vs-descendants-of'] : []),
    ...p.filters
      .filter((f) => p.createBody[f.field] !== undefined || f.field === 'name')
      .map((f) => `list/filter-${f.param}`),
  ];
}

function updateRules(p: ResourcePlan): string[] {
  return [
    'update/no-mask-changes-present-fields',
    ...(p.update ? ['update/mask-ignores-other-fields', 'update/star-replaces'] : []),
    'update/unknown-mask-rejected',
  ];
}

function rulesOf(p: ResourcePlan): string[] {
  const ops = new Set(p.operations);
  return [
    ...(ops.has('create') ? createRules(p) : []),
    ...(ops.has('get')
      ? [ops.has('create') ? 'get/returns-created' : 'get/returns-listed', 'get/not-found-has-resource-info']
      : []),
    ...(ops.has('list')
      ? ['list/envelope', 'list/page-size-bounds', ...(ops.has('create') ? listRulesWithRecords(p) : [])]
      : []),
    ...(ops.has('update') && ops.has('get') ? updateRules(p) : []),
    ...(ops.has('delete') && ops.has('get') ? ['delete/then-not-found'] : []),
    ...(ops.has('delete') && ops.has('create') && p.restrictingChildren.length > 0
      ? ['delete/refused-when-not-empty']
      : []),
  ];
}

/** Cross-cutting rules, checked once per implementation. */
export const apiRules = [
  'api/unknown-route-not-found',
  'api/malformed-json-invalid-argument',
  'api/error-body-shape',
  'api/no-token-unauthenticated',
  'api/bad-token-unauthenticated',
  'api/low-privilege-permission-denied',
  'api/built-in-viewer-role',
  'api/json-answers',
  'api/identity-create-shows-last-seen',
  'api/role-binding-hydrated',
  'api/v1-beside-v2',
  'api/tags-deprecated-listed',
  'api/v2beta1-names',
  'api/token-exchange-grpc',
];

/** Each v2 route with the rpc of the same operation; routes without one (HTTP only) are left out. */
function plannedRpcs(routes: Route[], rpcs: RpcDecl[]): PlannedRpc[] {
  return v2Routes(routes).flatMap(({ method, path, pattern, params, ...op }) => {
    const rpc = rpcs.find((r) =>
      op.endpoint
        ? r.endpoint === op.endpoint
        : r.kind === op.kind && r.resource === op.resource && r.subresource === op.subresource,
    );
    if (!rpc) return [];
    const { request, response, fields, bodyMessage } = rpc;
    return [{ method, path, pattern, params, grpc: rpc.path, request, response, fields, bodyMessage }];
  });
}

export function emitConformancePlan(model: ApiModel, routes: Route[], rpcs: RpcDecl[]): ConformancePlan {
  const problems: string[] = [];
  const resources = Object.values(model.resources).map((r) => plan(r, model, problems));
  if (problems.length > 0) throw new SpecError(problems);
  const rules: PlannedRule[] = apiRules.map((rule) => ({ name: rule, rule }));
  for (const p of resources)
    for (const rule of rulesOf(p)) rules.push({ name: `${p.id}/${rule}`, resource: p.collection, rule });
  return { version: model.version, resources, rules, rpcs: plannedRpcs(routes, rpcs) };
}
