// The conformance plan: for each resource, valid and invalid inputs derived from its fields and the rules
// that apply to it, named stably so that results can be compared across runs and implementations.
import {
  failingFields,
  type ConformancePlan,
  type PlannedRpc,
  type PlannedRule,
  type ResourcePlan,
  type VariedField,
} from '../conformance/plan.js';
import type { ApiModel, FieldModel, ResourceModel } from '../runtime/model/api-model.js';
import type { RpcDecl } from './proto-model.js';
import { readTemplate } from '../runtime/http/route-template.js';
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

const variedTypes = new Set(['string', 'bool', 'int32', 'int64', 'double', 'timestamp', 'enum']);

/**
 * The fields the suite gives every record a value of its own: those it orders or filters by, so that an order or a
 * filter has values to tell records apart, and every int64, so that values beyond 2^53 travel. Top-level scalars a
 * create may set; references are made by the suite, strings are varied by suffix already.
 */
function variedFields(r: ResourceModel, where: string, problems: string[]): Record<string, VariedField> {
  const named = new Set([
    ...Object.values(r.orderBy),
    ...r.filters.flatMap((f) => (f.field ? [f.field] : [])),
    ...Object.entries(r.fields)
      .filter(([, f]) => f.type === 'int64')
      .map(([k]) => k),
  ]);
  const varied: Record<string, VariedField> = {};
  for (const name of named) {
    const f = r.fields[name];
    // A field that needs a capability of its own to set (requires) is left to the rules of that capability.
    const settable = f && !f.repeated && !f.outputOnly && !f.inputOnly && !f.references && !f.requires;
    if (!settable || !variedTypes.has(f.type)) continue;
    varied[name] = {
      type: f.type as VariedField['type'],
      base: exampleValue({ ...f, repeated: false }, `${where}: /fields/${name}`, problems),
      ...(f.values ? { values: f.values } : {}),
      ...(f.minimum !== undefined ? { minimum: f.minimum } : {}),
      ...(f.maximum !== undefined ? { maximum: f.maximum } : {}),
    };
  }
  return varied;
}

const standardTypes: Record<string, string> = { uid: 'string', createTime: 'timestamp', updateTime: 'timestamp' };

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
      match !== 'set' && field && field !== 'parent'
        ? [{ param, field, match, type: r.fields[field]?.type ?? standardTypes[field] ?? 'string' }]
        : [],
    ),
    restrictingChildren: r.children.filter(
      (c) => model.resources[c].onParentDelete === 'restrict' && model.resources[c].operations.create,
    ),
    cascadingChildren: r.children.filter(
      (c) => model.resources[c].onParentDelete === 'cascade' && model.resources[c].operations.create,
    ),
    varied: r.operations.create ? variedFields(r, where, problems) : {},
    capabilities: Object.fromEntries(
      Object.entries(r.operations).map(([op, o]) => [op, Array.isArray(o.capability) ? o.capability : []]),
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
      .filter((f) => p.createBody[f.field] !== undefined || p.varied[f.field] || f.field in standardTypes)
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
    ...(ops.has('delete') && ops.has('create') ? p.cascadingChildren.map((c) => `delete/cascades-to-${c}`) : []),
    ...(Object.values(p.capabilities).some((c) => c.length > 0) && ops.has('create')
      ? ['access/each-operation-needs-its-capability']
      : []),
  ];
}

/** Cross-cutting rules any API gets, checked once per implementation. */
const apiRules = [
  'api/unknown-route-not-found',
  'api/malformed-json-invalid-argument',
  'api/error-body-shape',
  'api/no-token-unauthenticated',
  'api/bad-token-unauthenticated',
  'api/low-privilege-permission-denied',
  'api/json-answers',
];

const has = (m: ApiModel, ...collections: string[]) => collections.every((c) => m.resources[c]);
/** Served by v1 over gRPC: a v1 block and its domain's v1 package. */
const hasV1 = (m: ApiModel, ...collections: string[]) =>
  collections.every((c) => m.resources[c]?.v1 && m.proto.v1[m.resources[c].domain]);

/** The Platform's own rules (conformance/platform-rules.ts), each planned where the spec has what it checks. */
const ownRules: Record<string, (m: ApiModel) => boolean> = {
  'api/built-in-viewer-role': (m) => m.roles.some((r) => r.name === 'viewer'),
  'api/identity-create-shows-last-seen': (m) => !!m.resources.identities?.fields.lastSeenTime,
  'api/role-binding-hydrated': (m) => has(m, 'identities', 'roles', 'roleBindings'),
  'api/v1-beside-v2': (m) => hasV1(m, 'groups'),
  'api/tags-deprecated-listed': (m) => !!m.resources.tags?.fields.deprecated,
  'api/v2beta1-names': (m) => has(m, 'repos') && Object.values(m.proto.aliases).some((a) => a.length > 0),
  'api/token-exchange-grpc': (m) => !!m.proto.tokenService,
  'api/v1-grpc-create-then-list': (m) => hasV1(m, 'repos', 'groups', 'subscriptions'),
  'api/v1-grpc-update-replaces': (m) => hasV1(m, 'repos', 'groups'),
  'api/v1-grpc-list-gone-empty': (m) => hasV1(m, 'repos', 'groups', 'subscriptions'),
  'api/v1-grpc-errors': (m) => hasV1(m, 'repos'),
};

/** Each v2 route with the rpc of the same operation; routes without one (HTTP only) are left out. */
function plannedRpcs(routes: Route[], rpcs: RpcDecl[]): PlannedRpc[] {
  return v2Routes(routes).flatMap(({ method, path, template, params, ...op }) => {
    const rpc = rpcs.find((r) =>
      op.endpoint
        ? r.endpoint === op.endpoint
        : r.kind === op.kind && r.resource === op.resource && r.subresource === op.subresource,
    );
    if (!rpc) return [];
    const { request, response, fields, bodyMessage } = rpc;
    const pattern = pathPattern(template);
    return [{ method, path, pattern, params, grpc: rpc.path, request, response, fields, bodyMessage }];
  });
}

/**
 * The route's template as an anchored regular expression over a raw path, for the harness to tell which rpc a
 * recorded request was: a uid capture stops at ":" (runtime/http/route-template.ts), any other at "/".
 */
function pathPattern(template: string): string {
  const { literals, captures } = readTemplate(template);
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return `^${literals.map((l, i) => escape(l) + (i < captures.length ? (captures[i].spans ? '([^:]+)' : '([^/]+)') : '')).join('')}$`;
}

export function emitConformancePlan(model: ApiModel, routes: Route[], rpcs: RpcDecl[]): ConformancePlan {
  const problems: string[] = [];
  const resources = Object.values(model.resources).map((r) => plan(r, model, problems));
  if (problems.length > 0) throw new SpecError(problems);
  const rules: PlannedRule[] = [...apiRules, ...Object.keys(ownRules).filter((rule) => ownRules[rule](model))].map(
    (rule) => ({ name: rule, rule }),
  );
  for (const p of resources)
    for (const rule of rulesOf(p)) rules.push({ name: `${p.id}/${rule}`, resource: p.collection, rule });
  const creatorRole = model.roles.find((r) => r.name === model.resources.groups?.creatorRole);
  const tokenService = model.proto.tokenService;
  return {
    version: model.version,
    ...(model.tokenExchange === false
      ? {}
      : {
          tokenExchange: {
            path: '/sts/exchange',
            ...(tokenService ? { rpc: `/${tokenService}.SecurityTokenService/Exchange` } : {}),
          },
        }),
    grantable: [...(creatorRole?.capabilities ?? [])].sort(),
    resources,
    rules,
    rpcs: plannedRpcs(routes, rpcs),
  };
}
