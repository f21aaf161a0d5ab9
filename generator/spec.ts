// Reads spec/, validates it against spec.schema.json and cross-references, and derives the ApiModel.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parseDocument } from 'yaml';
import type { ApiModel, Capability, CapabilityModel, EndpointModel, FieldModel, ResourceModel, V1Model } from '../runtime/model.js';
import { standardFields } from '../runtime/model.js';

/** A spec problem, reported as "file: path: what is wrong". */
export class SpecError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

interface RawOperation { capability: string | string[]; event?: string; path?: string }
interface RawResource {
  type: string; collection: string; path?: string; description?: string; parent?: string; parentOptional?: boolean;
  uid?: 'generated' | 'parent'; onParentDelete?: 'restrict' | 'cascade'; readOnly?: boolean; naturalKey?: string[]; publicRootRecords?: boolean; creatorRole?: string; presenter?: string; onCreate?: string; upsertOn?: string; exclusive?: string[][];
  fields: Record<string, FieldModel>; filters?: ResourceModel['filters']; unservedFilters?: string[]; orderBy?: Record<string, string>;
  defaultOrder?: string; operations: Record<string, RawOperation>;
  subresources?: { name: string; type?: string; fields: Record<string, FieldModel>; get: RawOperation; update?: RawOperation }[];
  v1?: {
    collection: string; fields?: Record<string, string>; values?: Record<string, Record<string, string>>; params?: Record<string, string>;
    paged?: boolean; createRequest?: { parent: string; resource: string }; operations?: Record<string, RawOperation>;
  };
}
interface RawEndpoint {
  name: string; method: EndpointModel['method']; path: string; capability: string | string[]; scope?: string;
  query?: Record<string, FieldModel>; body?: Record<string, FieldModel>; response: Record<string, FieldModel>; event?: string;
}
type RawCapabilities = Record<string, CapabilityModel & { roles?: string[] }>;
interface RawDomain { domain: string; title: string; resources: RawResource[]; endpoints?: RawEndpoint[]; capabilities?: RawCapabilities }
interface RawAccess { capabilities: RawCapabilities; roles: { name: string; description: string; capabilities: string[]; bootstrap?: boolean }[] }

const readSchema = (name: string) => JSON.parse(readFileSync(new URL(name, import.meta.url), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false, formats: { regex: isRegex } });
const validateAccess = ajv.compile<RawAccess>(readSchema('./access.schema.json'));
const validateDomain = ajv.compile<RawDomain>(readSchema('./spec.schema.json'));

/** Built-in roles have the same uid on every server: 40 hex derived from the name. */
export function builtInRoleUid(name: string): string {
  return createHash('sha1').update(`built-in role ${name}`).digest('hex');
}

function isRegex(source: string): boolean {
  try {
    new RegExp(source, 'u');
    return true;
  } catch {
    return false;
  }
}

function describe(error: ErrorObject): string {
  const where = error.instancePath || '/';
  if (error.keyword === 'additionalProperties') return `${where}: unknown property "${error.params.additionalProperty}"`;
  if (error.keyword === 'enum') return `${where}: ${error.message} (${(error.params.allowedValues as unknown[]).join(', ')})`;
  if (error.keyword === 'const') return `${where}: must be ${JSON.stringify(error.params.allowedValue)}`;
  return `${where}: ${error.message}`;
}

function readYaml(file: string, problems: string[]): unknown {
  const doc = parseDocument(readFileSync(file, 'utf8'), { prettyErrors: true });
  if (doc.errors.length > 0) {
    for (const e of doc.errors) problems.push(`${file}: ${e.message.split('\n')[0]}`);
    return undefined;
  }
  return doc.toJS();
}

function capability(c: string | string[]): Capability {
  if (c === 'none' || c === 'authenticated') return c;
  return Array.isArray(c) ? [...c] : [c];
}

/** Loads every domain file of specDir (sorted, so output is deterministic) into one ApiModel. */
export function loadSpec(specDir: string): ApiModel {
  const problems: string[] = [];
  const files = readdirSync(specDir).filter((f) => /\.ya?ml$/.test(f)).sort();
  const apiFile = files.find((f) => /^api\.ya?ml$/.test(f));
  const accessFile = files.find((f) => /^access\.ya?ml$/.test(f));
  if (!apiFile) throw new SpecError([`${specDir}: no api.yaml (title, version, service)`]);
  const api = readYaml(join(specDir, apiFile), problems) as { title?: string; version?: string; service?: string } | undefined;
  if (api && (typeof api.title !== 'string' || typeof api.service !== 'string' || !/^[a-z][a-z0-9-]*$/.test(api.service))) {
    problems.push(`${join(specDir, apiFile)}: needs title and service (lowercase name used in error domains)`);
  }

  const model: ApiModel = {
    title: api?.title ?? '', version: api?.version ?? 'v2', service: api?.service ?? '',
    domains: [], resources: {}, endpoints: [], capabilities: {}, roles: [],
  };
  const origin = new Map<string, string>();
  const grants = new Map<string, Set<string>>();
  const addCapabilities = (caps: RawCapabilities, file: string) => {
    for (const [name, c] of Object.entries(caps)) {
      if (model.capabilities[name]) problems.push(`${file}: /capabilities/${name}: is already declared`);
      model.capabilities[name] = {
        v1: c.v1, ...(c.deprecated ? { deprecated: true } : {}), ...(c.internal ? { internal: true } : {}), ...(c.extension ? { extension: true } : {}),
      };
      for (const role of c.roles ?? []) (grants.get(role) ?? grants.set(role, new Set()).get(role)!).add(name);
    }
  };
  let access: RawAccess | undefined;
  if (!accessFile) problems.push(`${specDir}: no access.yaml (capabilities and built-in roles)`);
  else {
    const file = join(specDir, accessFile);
    const raw = readYaml(file, problems);
    if (raw !== undefined && !validateAccess(raw)) for (const e of validateAccess.errors ?? []) problems.push(`${file}: ${describe(e)}`);
    else if (raw !== undefined) {
      access = raw as RawAccess;
      addCapabilities(access.capabilities, file);
    }
  }

  for (const f of files.filter((f) => f !== apiFile && f !== accessFile)) {
    const file = join(specDir, f);
    const raw = readYaml(file, problems);
    if (raw === undefined) continue;
    if (!validateDomain(raw)) {
      for (const e of validateDomain.errors ?? []) problems.push(`${file}: ${describe(e)}`);
      continue;
    }
    if (model.domains.includes(raw.domain)) problems.push(`${file}: /domain: "${raw.domain}" is declared twice`);
    if (raw.capabilities) addCapabilities(raw.capabilities, file);
    model.domains.push(raw.domain);
    raw.resources.forEach((r, i) => {
      const at = `${file}: /resources/${i}`;
      if (model.resources[r.collection]) {
        problems.push(`${at}/collection: "${r.collection}" is already declared in ${origin.get(r.collection)}`);
        return;
      }
      origin.set(r.collection, file);
      model.resources[r.collection] = toResource(raw.domain, r, at, problems);
    });
    (raw.endpoints ?? []).forEach((e) => {
      model.endpoints.push({
        domain: raw.domain, name: e.name, method: e.method, path: e.path, capability: capability(e.capability),
        scope: e.scope, query: e.query ?? {}, body: e.body, response: e.response, event: e.event,
      });
    });
  }
  model.domains.sort();

  // Every file has declared its capabilities now: the vocabulary is complete.
  const vocabulary = Object.keys(model.capabilities);
  for (const r of Object.values(model.resources)) {
    resolveCapabilityValues(r.fields, vocabulary);
    for (const sub of r.subresources) resolveCapabilityValues(sub.fields, vocabulary);
  }
  for (const e of model.endpoints) for (const fields of [e.query, e.body, e.response]) resolveCapabilityValues(fields, vocabulary);

  for (const r of Object.values(model.resources)) {
    const at = `${origin.get(r.collection)}: resource ${r.collection}`;
    if (r.parent) {
      const parent = model.resources[r.parent];
      if (!parent) problems.push(`${at}: /parent: no resource has the collection "${r.parent}"`);
      else parent.children.push(r.collection);
    }
    if (r.uid === 'parent' && !r.parent) problems.push(`${at}: /uid: "parent" needs a parent`);
    for (const [name, f] of Object.entries(r.fields)) {
      if (f.references && !model.resources[f.references]) problems.push(`${at}: /fields/${name}/references: no resource has the collection "${f.references}"`);
    }
  }
  const names = new Map<string, string>();
  for (const e of model.endpoints) {
    const key = `${e.domain}.${e.name}`;
    if (names.has(key)) problems.push(`endpoint ${key} is declared twice`);
    names.set(key, key);
    const params = [...e.path.matchAll(/\{(\w+)\*?\}/g)].map((m) => m[1]);
    if (e.scope && !params.includes(e.scope)) problems.push(`endpoint ${key}: /scope: "${e.scope}" is not a path parameter of ${e.path}`);
  }
  for (const r of Object.values(model.resources)) r.children.sort();

  for (const role of access?.roles ?? []) {
    const caps = new Set([...role.capabilities, ...(grants.get(role.name) ?? [])]);
    for (const c of caps) if (!model.capabilities[c]) problems.push(`access.yaml: role ${role.name}: unknown capability ${c}`);
    model.roles.push({ uid: builtInRoleUid(role.name), name: role.name, description: role.description, capabilities: [...caps].sort(), bootstrap: role.bootstrap ?? false });
  }
  for (const r of Object.values(model.resources)) {
    if (r.creatorRole && !model.roles.some((x) => x.name === r.creatorRole)) problems.push(`resource ${r.collection}: /creatorRole: no built-in role "${r.creatorRole}"`);
  }
  for (const role of grants.keys()) if (!model.roles.some((r) => r.name === role)) problems.push(`a capability is granted to the unknown role "${role}"`);
  const used: [string, Capability][] = [
    ...Object.values(model.resources).flatMap((r) => [
      ...Object.entries(r.operations).map(([op, o]) => [`resource ${r.collection}: /operations/${op}`, o!.capability] as [string, Capability]),
      ...Object.entries(r.v1?.operations ?? {}).map(([op, o]) => [`resource ${r.collection}: /v1/operations/${op}`, o!.capability] as [string, Capability]),
      ...r.subresources.flatMap((s) => [[`resource ${r.collection}: /subresources/${s.name}/get`, s.get.capability], ...(s.update ? [[`resource ${r.collection}: /subresources/${s.name}/update`, s.update.capability]] : [])] as [string, Capability][]),
    ]),
    ...model.endpoints.map((e) => [`endpoint ${e.domain}.${e.name}`, e.capability] as [string, Capability]),
  ];
  for (const [where, cap] of used) {
    if (cap === 'none' || cap === 'authenticated') continue;
    for (const c of cap) if (!model.capabilities[c]) problems.push(`${where}: unknown capability ${c} (declare it under capabilities:)`);
  }
  if (problems.length > 0) throw new SpecError(problems);
  return model;
}

function toResource(domain: string, r: RawResource, at: string, problems: string[]): ResourceModel {
  const all = { ...standardFields, ...r.fields };
  for (const [name, f] of Object.entries(r.fields)) {
    if (name in standardFields) problems.push(`${at}/fields/${name}: is a standard field, declared by the server`);
    if (f.setOnCreate && (f.type !== 'timestamp' || !f.outputOnly || f.repeated)) problems.push(`${at}/fields/${name}/setOnCreate: only for an output-only timestamp`);
  }
  const filters = r.filters ?? [];
  filters.forEach((flt, j) => {
    if (flt.field === 'parent') {
      if (!r.parent) problems.push(`${at}/filters/${j}/field: "parent" needs a parent`);
      return;
    }
    const named = flt.field !== undefined ? [flt.field] : Object.values(flt.fields ?? {}).filter((n): n is string => n !== null);
    for (const name of named) {
      const field = all[name];
      if (!field) problems.push(`${at}/filters/${j}: no field "${name}"`);
      else if (flt.match !== 'set' && (field.repeated || field.type === 'object' || field.type === 'map')) {
        problems.push(`${at}/filters/${j}/field: "${name}" is not a scalar field`);
      }
    }
  });
  const params = [...filters.map((f) => f.param), ...(r.unservedFilters ?? [])];
  for (const [i, name] of params.entries()) if (params.indexOf(name) < i) problems.push(`${at}: the list parameter "${name}" is declared twice`);
  const orderBy: Record<string, string> = { ...(r.orderBy ?? {}), uid: 'uid' };
  for (const [key, field] of Object.entries(orderBy)) {
    const f = all[field];
    if (!f) problems.push(`${at}/orderBy/${key}: no field "${field}"`);
    else if (f.repeated || f.type === 'object' || f.type === 'map') problems.push(`${at}/orderBy/${key}: "${field}" is not sortable`);
  }
  const [orderKey, direction] = (r.defaultOrder ?? 'uid').split(' ');
  if (!(orderKey in orderBy)) problems.push(`${at}/defaultOrder: "${orderKey}" is not in orderBy`);
  for (const f of [...(r.upsertOn ? [r.upsertOn] : []), ...(r.exclusive ?? []).flat()]) {
    if (!r.fields[f]) problems.push(`${at}: no field "${f}" (named by upsertOn or exclusive)`);
  }
  if (r.uid === 'parent' && r.parentOptional) problems.push(`${at}/uid: "parent" cannot combine with parentOptional`);
  for (const k of r.naturalKey ?? []) {
    const f = all[k];
    if (k === 'parent' ? !r.parent : !f || k === 'uid') problems.push(`${at}/naturalKey: no field "${k}"`);
    else if (f && (f.repeated || f.type === 'object' || f.type === 'map')) problems.push(`${at}/naturalKey: "${k}" is not a scalar field`);
  }
  // A record's uid is under its parent: a record found by its key must be found under the same parent.
  if (r.naturalKey && r.parent && !r.naturalKey.includes('parent')) problems.push(`${at}/naturalKey: must include parent`);

  const ops: ResourceModel['operations'] = {};
  let listPath: string | undefined;
  for (const [name, op] of Object.entries(r.operations)) {
    if (op.path && name !== 'list') problems.push(`${at}/operations/${name}/path: only list takes a path`);
    if (op.path) {
      if (!op.path.includes('{parent}')) problems.push(`${at}/operations/list/path: must contain {parent}`);
      if (!r.parent) problems.push(`${at}/operations/list/path: a nested list needs a parent`);
      listPath = op.path;
    }
    ops[name as keyof ResourceModel['operations']] = { capability: capability(op.capability), event: op.event };
  }
  if (r.readOnly && (ops.create || ops.update || ops.delete)) {
    problems.push(`${at}/operations: a readOnly resource has no create, update or delete`);
  }

  return {
    domain, type: r.type, collection: r.collection, path: r.path ?? r.collection, listPath,
    parent: r.parent, parentOptional: r.parentOptional ?? false, uid: r.uid ?? 'generated',
    onParentDelete: r.onParentDelete ?? 'restrict', readOnly: r.readOnly ?? false, naturalKey: r.naturalKey, publicRootRecords: r.publicRootRecords ?? false, creatorRole: r.creatorRole, presenter: r.presenter, onCreate: r.onCreate, upsertOn: r.upsertOn, exclusive: r.exclusive ?? [],
    fields: r.fields, filters, unservedFilters: r.unservedFilters ?? [], orderBy, defaultOrder: { key: orderKey, desc: direction === 'desc' },
    operations: ops,
    subresources: (r.subresources ?? []).map((s) => ({
      name: s.name, type: s.type ?? `${r.type}${s.name[0].toUpperCase()}${s.name.slice(1)}`, fields: s.fields,
      get: { capability: capability(s.get.capability), event: s.get.event },
      update: s.update && { capability: capability(s.update.capability), event: s.update.event },
    })),
    children: [],
    v1: r.v1 && toV1(r.v1, all, filters, ops, r.readOnly ?? false, `${at}/v1`, problems),
  };
}

/** `values: $capabilities` becomes the capability vocabulary, so that no list of capabilities is written twice. */
function resolveCapabilityValues(fields: Record<string, FieldModel> | undefined, vocabulary: string[]): void {
  for (const f of Object.values(fields ?? {})) {
    if ((f.values as unknown) === '$capabilities') f.values = vocabulary;
    resolveCapabilityValues(f.fields, vocabulary);
    if (f.mapValue) resolveCapabilityValues({ value: f.mapValue }, vocabulary);
  }
}

/** The field a dotted path names, through nested objects. */
function fieldAt(fields: Record<string, FieldModel>, path: string): FieldModel | undefined {
  const [head, ...rest] = path.split('.');
  const f = fields[head];
  return rest.length === 0 || !f ? f : fieldAt(f.fields ?? {}, rest.join('.'));
}

function toV1(v1: NonNullable<RawResource['v1']>, all: Record<string, FieldModel>, filters: ResourceModel['filters'], ops: ResourceModel['operations'], readOnly: boolean, at: string, problems: string[]): V1Model {
  for (const path of Object.keys(v1.fields ?? {})) if (!fieldAt(all, path)) problems.push(`${at}/fields/${path}: no field "${path}"`);
  for (const [path, values] of Object.entries(v1.values ?? {})) {
    const f = fieldAt(all, path);
    if (f?.type !== 'enum') problems.push(`${at}/values/${path}: not an enum field`);
    else for (const v of Object.keys(values)) if (!f.values?.includes(v)) problems.push(`${at}/values/${path}/${v}: not a value of the enum`);
  }
  for (const [name, param] of Object.entries(v1.params ?? {})) {
    if (!filters.some((f) => f.param === param)) problems.push(`${at}/params/${name}: "${param}" is not a filter of the v2 list`);
  }
  if (v1.paged && !ops.list) problems.push(`${at}/paged: the resource has no list`);
  const operations: V1Model['operations'] = {};
  for (const [name, op] of Object.entries(v1.operations ?? {})) {
    const key = name as keyof V1Model['operations'];
    if (ops[key]) problems.push(`${at}/operations/${name}: v2 has this operation already; v1 serves it as it is`);
    operations[key] = { capability: capability(op.capability), event: op.event };
  }
  if (readOnly && Object.keys(operations).length > 0) problems.push(`${at}/operations: a readOnly resource has no writes`);
  return {
    collection: v1.collection, fields: v1.fields ?? {}, values: v1.values ?? {}, params: v1.params ?? {}, paged: v1.paged ?? false,
    createRequest: v1.createRequest, operations,
  };
}
