// Reads spec/, validates it against spec.schema.json and cross-references, and derives the ApiModel.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { parseDocument } from 'yaml';
import type { ApiModel, Capability, EndpointModel, FieldModel, ResourceModel } from '../runtime/model.js';
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
  uid?: 'generated' | 'parent'; onParentDelete?: 'restrict' | 'cascade'; readOnly?: boolean;
  fields: Record<string, FieldModel>; filters?: ResourceModel['filters']; orderBy?: Record<string, string>;
  defaultOrder?: string; operations: Record<string, RawOperation>;
  subresources?: { name: string; type?: string; fields: Record<string, FieldModel>; get: RawOperation; update?: RawOperation }[];
  v1?: { collection: string; fields?: Record<string, string> };
}
interface RawEndpoint {
  name: string; method: EndpointModel['method']; path: string; capability: string | string[]; scope?: string;
  query?: Record<string, FieldModel>; body?: Record<string, FieldModel>; response: Record<string, FieldModel>; event?: string;
}
interface RawDomain { domain: string; title: string; resources: RawResource[]; endpoints?: RawEndpoint[] }

const schema = JSON.parse(readFileSync(new URL('./spec.schema.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false, formats: { regex: isRegex } });
const validateDomain = ajv.compile<RawDomain>(schema);

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
  if (c === 'none') return 'none';
  return Array.isArray(c) ? [...c] : [c];
}

/** Loads every domain file of specDir (sorted, so output is deterministic) into one ApiModel. */
export function loadSpec(specDir: string): ApiModel {
  const problems: string[] = [];
  const files = readdirSync(specDir).filter((f) => /\.ya?ml$/.test(f)).sort();
  const apiFile = files.find((f) => /^api\.ya?ml$/.test(f));
  if (!apiFile) throw new SpecError([`${specDir}: no api.yaml (title, version, service)`]);
  const api = readYaml(join(specDir, apiFile), problems) as { title?: string; version?: string; service?: string } | undefined;
  if (api && (typeof api.title !== 'string' || typeof api.service !== 'string' || !/^[a-z][a-z0-9-]*$/.test(api.service))) {
    problems.push(`${join(specDir, apiFile)}: needs title and service (lowercase name used in error domains)`);
  }

  const model: ApiModel = {
    title: api?.title ?? '', version: api?.version ?? 'v2', service: api?.service ?? '',
    domains: [], resources: {}, endpoints: [],
  };
  const origin = new Map<string, string>();

  for (const f of files.filter((f) => f !== apiFile)) {
    const file = join(specDir, f);
    const raw = readYaml(file, problems);
    if (raw === undefined) continue;
    if (!validateDomain(raw)) {
      for (const e of validateDomain.errors ?? []) problems.push(`${file}: ${describe(e)}`);
      continue;
    }
    if (model.domains.includes(raw.domain)) problems.push(`${file}: /domain: "${raw.domain}" is declared twice`);
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

  for (const r of Object.values(model.resources)) {
    const at = `${origin.get(r.collection)}: resource ${r.collection}`;
    if (r.parent) {
      const parent = model.resources[r.parent];
      if (!parent) problems.push(`${at}: /parent: no resource has the collection "${r.parent}"`);
      else parent.children.push(r.collection);
    }
    if (r.uid === 'parent' && !r.parent) problems.push(`${at}: /uid: "parent" needs a parent`);
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
  if (problems.length > 0) throw new SpecError(problems);
  return model;
}

function toResource(domain: string, r: RawResource, at: string, problems: string[]): ResourceModel {
  const all = { ...standardFields, ...r.fields };
  for (const f of Object.keys(r.fields)) {
    if (f in standardFields) problems.push(`${at}/fields/${f}: is a standard field, declared by the server`);
  }
  const filters = r.filters ?? [];
  filters.forEach((flt, j) => {
    const field = all[flt.field];
    if (!field) problems.push(`${at}/filters/${j}/field: no field "${flt.field}"`);
    else if (field.repeated || field.type === 'object' || field.type === 'map') {
      problems.push(`${at}/filters/${j}/field: "${flt.field}" is not a scalar field`);
    }
  });
  const orderBy: Record<string, string> = { ...(r.orderBy ?? {}), uid: 'uid' };
  for (const [key, field] of Object.entries(orderBy)) {
    const f = all[field];
    if (!f) problems.push(`${at}/orderBy/${key}: no field "${field}"`);
    else if (f.repeated || f.type === 'object' || f.type === 'map') problems.push(`${at}/orderBy/${key}: "${field}" is not sortable`);
  }
  const [orderKey, direction] = (r.defaultOrder ?? 'uid').split(' ');
  if (!(orderKey in orderBy)) problems.push(`${at}/defaultOrder: "${orderKey}" is not in orderBy`);
  if (r.uid === 'parent' && r.parentOptional) problems.push(`${at}/uid: "parent" cannot combine with parentOptional`);

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
    onParentDelete: r.onParentDelete ?? 'restrict', readOnly: r.readOnly ?? false,
    fields: r.fields, filters, orderBy, defaultOrder: { key: orderKey, desc: direction === 'desc' },
    operations: ops,
    subresources: (r.subresources ?? []).map((s) => ({
      name: s.name, type: s.type ?? `${r.type}${s.name[0].toUpperCase()}${s.name.slice(1)}`, fields: s.fields,
      get: { capability: capability(s.get.capability), event: s.get.event },
      update: s.update && { capability: capability(s.update.capability), event: s.update.event },
    })),
    children: [],
    v1: r.v1 && { collection: r.v1.collection, fields: r.v1.fields ?? {} },
  };
}
