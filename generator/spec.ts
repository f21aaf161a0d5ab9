// Reads spec/, validates it against spec.schema.json and cross-references, and derives the ApiModel.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject } from 'ajv';
import { parseDocument } from 'yaml';
import type {
  ApiModel,
  Capability,
  CapabilityModel,
  EndpointModel,
  FieldModel,
  FilterModel,
  ResourceModel,
  V1Model,
} from '../runtime/model/api-model.js';
import { standardFields, type ApiInfo } from '../runtime/model/api-model.js';
import { snakeCase } from '../runtime/model/field-names.js';
import type { ProtoApiModel, ProtoOperationModel, V1ProtoModel } from '../runtime/model/api-model.js';
import { applySchemaLock, readSchemaLock } from './schema-lock.js';
import {
  checkProto,
  normalizeFields,
  normalizeOperation,
  normalizeRequest,
  type RawProtoField,
  type SpecOrigins,
} from './spec-proto.js';

/** A spec problem, reported as "file: path: what is wrong". */
export class SpecError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

interface RawOperation {
  capability: string | string[];
  event?: string;
  path?: string;
  proto?: ProtoOperationModel;
}
interface RawResource {
  type: string;
  collection: string;
  path?: string;
  description?: string;
  parent?: string;
  timestamps?: ResourceModel['timestamps'];
  parentOptional?: boolean;
  uid?: 'generated' | 'parent';
  onParentDelete?: 'restrict' | 'cascade';
  readOnly?: boolean;
  naturalKey?: string[];
  publicRootRecords?: boolean;
  creatorRole?: string;
  presenter?: string;
  presents?: Record<string, FieldModel>;
  onCreate?: string;
  eventFields?: string[];
  indexes?: string[][];
  upsertOn?: string;
  batchCreate?: { max?: number; shared?: string[] };
  batchDelete?: { max?: number };
  exclusive?: string[][];
  fields: Record<string, FieldModel>;
  filters?: ResourceModel['filters'];
  unservedFilters?: string[];
  orderBy?: Record<string, string>;
  defaultOrder?: string;
  operations: Record<string, RawOperation>;
  subresources?: {
    name: string;
    type?: string;
    fields: Record<string, FieldModel>;
    get: RawOperation;
    update?: RawOperation;
    proto?: ResourceModel['subresources'][number]['proto'];
  }[];
  proto?: ResourceModel['proto'];
  v1?: {
    collection: string;
    fields?: Record<string, string>;
    values?: Record<string, Record<string, string>>;
    params?: Record<string, string>;
    paged?: boolean;
    createRequest?: { parent: string; resource: string };
    /** v1 field -> `<subresource>.<field>`: a field v1 has on the record that v2 keeps in a subresource */
    subresourceFields?: Record<string, string>;
    operations?: Record<string, RawOperation>;
  };
}
interface RawEndpoint {
  name: string;
  method: EndpointModel['method'];
  path: string;
  version?: EndpointModel['version'];
  prefix?: string;
  capability: string | string[];
  scope?: string;
  lists?: string;
  listQuery?: true;
  query?: Record<string, FieldModel>;
  body?: Record<string, FieldModel>;
  response: Record<string, FieldModel>;
  event?: string;
  unimplemented?: string;
  proto?: { service: string; rpc?: string; request: Record<string, RawProtoField>; response?: string };
}
type RawCapabilities = Record<string, CapabilityModel & { roles?: string[] }>;
interface RawDomain {
  domain: string;
  title: string;
  resources: RawResource[];
  endpoints?: RawEndpoint[];
  capabilities?: RawCapabilities;
  proto?: { package: string; aliases?: string[] };
  v1Proto?: V1ProtoModel;
}
interface RawAccess {
  capabilities: RawCapabilities;
  roles: { name: string; description: string; capabilities: string[]; bootstrap?: boolean }[];
  proto?: ProtoApiModel['capabilities'];
  /** removed capability -> the one stored roles take: the renamedValues of each field of values $capabilities */
  renamedCapabilities?: Record<string, string>;
}

/**
 * The framework's spec modules (framework/spec/), which api.yaml's `include` names: what the runtime needs of every
 * API, declared once. A module with a file is read as a domain file of the spec; a file of the spec for the same
 * domain adds to it (docs/writing-a-spec.md, "Starting a new API").
 */
export const frameworkSpecDir = fileURLToPath(new URL('../framework/spec/', import.meta.url));
const frameworkModules: Record<string, { file: boolean; what: string }> = {
  iam: { file: true, what: 'the IAM core: groups, identities, roles, role bindings' },
  events: { file: true, what: 'the events core: subscriptions and their deliveries' },
  sts: { file: false, what: 'the token service: POST /sts/exchange, /sts/exchange_refresh_token, and over gRPC' },
};
const includeExample = 'include: [iam, events, sts]';

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
  if (error.keyword === 'additionalProperties')
    return `${where}: unknown property "${error.params.additionalProperty}"`;
  if (error.keyword === 'enum')
    return `${where}: ${error.message} (${(error.params.allowedValues as unknown[]).join(', ')})`;
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

/**
 * What loading collects on the way: where each resource and capability was declared (file and path, so a problem
 * found later names the place to fix), and which roles grant which capabilities, from where.
 */
interface Loading {
  specDir: string;
  model: ApiModel;
  problems: string[];
  /** collection -> "file: /resources/i" */
  origin: Map<string, string>;
  /** capability -> "file: /capabilities/NAME"; its gRPC number -> the capability that has it */
  capabilityOrigin: Map<string, string>;
  capabilityNumbers: Map<number, string>;
  /** role -> capability -> where the grant is declared */
  grants: Map<string, Map<string, string>>;
  /** the i-th endpoint of model.endpoints -> "file: /endpoints/j" */
  endpointOrigin: string[];
  /** domain -> its file */
  domainOrigin: Map<string, string>;
  access?: RawAccess;
  /** the access.yaml read: the spec's, or the framework's when the spec has none */
  accessFile: string;
  /** domains of included modules that no file of the spec has added to yet */
  coreDomains: Set<string>;
  coreNames: CoreNames;
}

const declared = new WeakMap<ApiModel, SpecOrigins>();

/** Where loadSpec found each resource, endpoint and capability of the model, so later problems name the place. */
export const specOrigins = (model: ApiModel): SpecOrigins | undefined => declared.get(model);

function originsOf({ model, origin, endpointOrigin, capabilityOrigin, domainOrigin }: Loading): SpecOrigins {
  return {
    resource: (c) => origin.get(c) ?? `resource ${c}`,
    endpoint: (e) => endpointOrigin[model.endpoints.indexOf(e)] ?? `endpoint ${e.domain}.${e.name}`,
    capability: (c) => capabilityOrigin.get(c) ?? `capability ${c}`,
    domain: (d) => `${domainOrigin.get(d) ?? `domain ${d}`}: `,
  };
}

/** Loads every domain file of specDir (sorted, so output is deterministic) into one ApiModel. */
export function loadSpec(specDir: string): ApiModel {
  const problems: string[] = [];
  const files = readdirSync(specDir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  const apiFile = files.find((f) => /^api\.ya?ml$/.test(f));
  const accessFile = files.find((f) => /^access\.ya?ml$/.test(f));
  if (!apiFile) throw new SpecError([`${specDir}: no api.yaml (title, version, service)`]);
  const { model, include, core: coreNames } = readApi(join(specDir, apiFile), problems);
  const loading: Loading = {
    specDir,
    model,
    problems,
    origin: new Map(),
    capabilityOrigin: new Map(),
    capabilityNumbers: new Map(),
    grants: new Map(),
    endpointOrigin: [],
    accessFile: accessFile ? join(specDir, accessFile) : join(frameworkSpecDir, 'access.yaml'),
    coreDomains: new Set(),
    domainOrigin: new Map(),
    coreNames,
  };
  readAccess(loading);
  // In file-name order, an included module just before the spec's file of the same name (which adds to it).
  const domainFiles = [
    ...include
      .filter((m) => Object.hasOwn(frameworkModules, m) && frameworkModules[m].file)
      .map((m) => join(frameworkSpecDir, `${m}.yaml`)),
    ...files.filter((f) => f !== apiFile && f !== accessFile).map((f) => join(specDir, f)),
  ];
  const core = (f: string) => f.startsWith(frameworkSpecDir);
  const order = (f: string) => `${basename(f)}\0${core(f) ? 0 : 1}`;
  for (const f of domainFiles.sort((a, b) => (order(a) < order(b) ? -1 : 1))) readDomain(loading, f, core(f));
  checkIncludes(loading, include, join(specDir, apiFile));
  loading.model.domains.sort();
  // Every file has declared its capabilities now: the vocabulary is complete.
  resolveVocabulary(loading.model, loading.access?.renamedCapabilities ?? {});
  linkResources(loading);
  checkEndpoints(loading);
  addBuiltInRoles(loading);
  for (const r of Object.values(loading.model.resources)) {
    const at = loading.origin.get(r.collection)!;
    checkFieldDeclarations(r.fields, `${at}/fields`, problems);
    r.subresources.forEach((sub) =>
      checkFieldDeclarations(sub.fields, `${at}/subresources/${sub.name}/fields`, problems),
    );
  }
  checkCapabilitiesUsed(loading);
  const origins = originsOf(loading);
  declared.set(loading.model, origins);
  checkProto(loading.model, problems, origins);
  const lock = readSchemaLock(specDir);
  const vocabularyAt = `${loading.accessFile}: /renamedCapabilities`;
  applySchemaLock(loading.model, lock, (c) => loading.origin.get(c)!, problems, vocabularyAt);
  if (problems.length > 0) throw new SpecError(problems);
  return loading.model;
}

/** The OpenAPI info api.yaml declares: its release, what it is, who answers for it, and its license. */
function apiInfo(api: Partial<ApiInfo>, file: string, problems: string[]): ApiInfo {
  const { release = '0.0.0', description, contact, license } = api;
  if (typeof release !== 'string' || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(release))
    problems.push(`${file}: release must be a semantic version (1.2.3), got ${JSON.stringify(release)}`);
  if (description !== undefined && typeof description !== 'string') problems.push(`${file}: description must be text`);
  if (license !== undefined && (typeof license.name !== 'string' || !(license.identifier || license.url)))
    problems.push(`${file}: license needs a name, and an SPDX identifier or a url`);
  return {
    release: String(release),
    ...(description ? { description: description.trim() } : {}),
    ...(contact ? { contact } : {}),
    ...(license ? { license } : {}),
  };
}

function checkedSchemaVersion(given: number | undefined, file: string, problems: string[]): number {
  const schemaVersion = given ?? 1;
  if (!Number.isSafeInteger(schemaVersion) || schemaVersion < 1)
    problems.push(`${file}: schemaVersion must be a whole number from 1, got ${JSON.stringify(schemaVersion)}`);
  return schemaVersion;
}

/**
 * What the framework's modules are called on the wire, from api.yaml's `core`: their gRPC packages
 * (`<proto>.iam.v2`), their event types (`<events>.iam.group.created.v1`) and the capability enum of the framework's
 * access.yaml. The modules write `${proto}`, `${events}` and `${capabilityEnum}` where these go, so that a new API's
 * contract carries its own names and the Platform's the reference's.
 */
interface CoreNames {
  proto: string;
  events: string;
  capabilityEnum?: string;
}

function readCoreNames(given: Partial<CoreNames> | undefined, service: string, file: string, problems: string[]) {
  const names = { proto: given?.proto ?? service, events: given?.events ?? service };
  for (const [key, name] of Object.entries(names))
    if (typeof name !== 'string' || !/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/.test(name))
      problems.push(
        `${file}: /core/${key}: a dotted lowercase name (e.g. example.catalog), got ${JSON.stringify(name)}`,
      );
  for (const key of Object.keys(given ?? {}))
    if (!(key in names)) problems.push(`${file}: /core: unknown property "${key}" (proto, events)`);
  return names;
}

/** A framework module's text with api.yaml's names put in for `${proto}`, `${events}` and `${capabilityEnum}`. */
function withCoreNames<T>(raw: T, names: CoreNames): T {
  const put = (v: unknown): unknown => {
    if (typeof v === 'string')
      return v.replace(/\$\{(proto|events|capabilityEnum)\}/g, (_, k: keyof CoreNames) => names[k] ?? '');
    if (Array.isArray(v)) return v.map(put);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, put(x)]));
    return v;
  };
  return put(raw) as T;
}

function readApi(file: string, problems: string[]): { model: ApiModel; include: string[]; core: CoreNames } {
  const api = readYaml(file, problems) as
    | {
        include?: string[];
        title?: string;
        version?: string;
        service?: string;
        schemaVersion?: number;
        release?: string;
        description?: string;
        contact?: ApiInfo['contact'];
        license?: ApiInfo['license'];
        proto?: { hierarchyFilter?: string; tokenService?: string };
        core?: Partial<CoreNames>;
      }
    | undefined;
  if (
    api &&
    (typeof api.title !== 'string' || typeof api.service !== 'string' || !/^[a-z][a-z0-9-]*$/.test(api.service))
  ) {
    problems.push(`${file}: needs title and service (lowercase name used in error domains)`);
  }
  const schemaVersion = checkedSchemaVersion(api?.schemaVersion, file, problems);
  const include = readInclude(api?.include, file, problems);
  const core = readCoreNames(api?.core, api?.service ?? '', file, problems);
  const model: ApiModel = {
    title: api?.title ?? '',
    info: apiInfo(api ?? {}, file, problems),
    domainTitles: {},
    version: api?.version ?? 'v2',
    service: api?.service ?? '',
    schemaVersion,
    domains: [],
    resources: {},
    endpoints: [],
    capabilities: {},
    roles: [],
    proto: apiProto(api?.proto ?? {}, core),
  };
  return { model, include, core };
}

/** api.yaml's proto: the hierarchy filter is in the framework's package unless named. */
function apiProto(given: { hierarchyFilter?: string; tokenService?: string }, core: CoreNames): ApiModel['proto'] {
  return {
    packages: {},
    aliases: {},
    v1: {},
    hierarchyFilter: given.hierarchyFilter ?? `${core.proto}.common.UIDPFilter`,
    ...(given.tokenService ? { tokenService: given.tokenService } : {}),
  };
}

function readInclude(include: unknown = [], file: string, problems: string[]): string[] {
  if (Array.isArray(include) && include.every((m) => typeof m === 'string')) return include;
  problems.push(`${file}: /include: a list of the framework's modules (${includeExample})`);
  return [];
}

/**
 * What the runtime needs by name comes from the framework's modules: a spec that leaves one out is refused here,
 * naming what to include, rather than failing at start.
 */
function checkIncludes(
  { model, problems, origin, endpointOrigin, coreNames }: Loading,
  include: string[],
  file: string,
): void {
  const before = problems.length;
  include.forEach((m, i) => {
    if (!Object.hasOwn(frameworkModules, m))
      problems.push(`${file}: /include/${i}: no framework module "${m}" (${Object.keys(frameworkModules).join(', ')})`);
  });
  const need = (module: string, why: string) =>
    problems.push(`${file}: /include: ${why}: include ${module}, ${frameworkModules[module].what} (${includeExample})`);
  const iam = ['groups', 'identities', 'roles', 'roleBindings'].filter((c) => !model.resources[c]);
  if (iam.length > 0) need('iam', `the server needs the collections ${iam.join(', ')} (authorization, bootstrap)`);
  const evented =
    Object.values(model.resources).find((r) => Object.values(r.operations).some((o) => o?.event)) ??
    model.endpoints.find((e) => e.event);
  const at =
    evented &&
    ('collection' in evented ? origin.get(evented.collection) : endpointOrigin[model.endpoints.indexOf(evented)]);
  if (at && !(model.resources.subscriptions && model.resources.deliveries))
    need('events', `${at} declares an event, and events are delivered to subscriptions`);
  if (!include.includes('sts')) {
    model.tokenExchange = false;
    if (model.proto.tokenService) problems.push(`${file}: /proto/tokenService: needs the token service (include sts)`);
  } else model.proto.tokenService ??= `${coreNames.proto}.oidc`;
  // Without the cores, most other problems would be their echoes (a parent "groups" that no resource has).
  if (problems.length > before) throw new SpecError(problems.slice(before));
}

/** A capability's gRPC number is the spec's, or one the generator gives it (generator/proto-lock.ts). */
function addCapabilities(loading: Loading, caps: RawCapabilities, file: string): void {
  const { model, grants, problems, capabilityOrigin, capabilityNumbers } = loading;
  for (const [name, c] of Object.entries(caps)) {
    const at = `${file}: /capabilities/${name}`;
    if (model.capabilities[name]) problems.push(`${at}: is already declared in ${capabilityOrigin.get(name)}`);
    else capabilityOrigin.set(name, at);
    const taken = c.proto === undefined ? undefined : capabilityNumbers.get(c.proto);
    // Two values with one number make the Capability enum invalid: every .proto loader refuses it.
    if (taken && taken !== name)
      problems.push(`${at}/proto: ${c.proto} is already the number of ${taken} (${capabilityOrigin.get(taken)})`);
    else if (c.proto !== undefined) capabilityNumbers.set(c.proto, name);
    const v1Twin = Object.entries(model.capabilities).find(([other, m]) => other !== name && m.v1 === c.v1);
    if (v1Twin) problems.push(`${at}/v1: "${c.v1}" is already the v1 name of ${v1Twin[0]}`);
    model.capabilities[name] = {
      v1: c.v1,
      ...(c.deprecated ? { deprecated: true } : {}),
      ...(c.internal ? { internal: true } : {}),
      ...(c.extension ? { extension: true } : {}),
      ...(c.proto ? { proto: c.proto } : {}),
    };
    (c.roles ?? []).forEach((role, i) =>
      (grants.get(role) ?? grants.set(role, new Map()).get(role)!).set(name, `${at}/roles/${i}`),
    );
  }
}

function readAccess(loading: Loading): void {
  const file = loading.accessFile;
  const read = readYaml(file, loading.problems);
  const raw = file.startsWith(frameworkSpecDir) ? withCoreNames(read, loading.coreNames) : read;
  if (raw === undefined) return;
  if (!validateAccess(raw)) {
    for (const e of validateAccess.errors ?? []) loading.problems.push(`${file}: ${describe(e)}`);
    return;
  }
  loading.access = raw;
  if (raw.proto) loading.model.proto.capabilities = raw.proto;
  loading.coreNames.capabilityEnum = raw.proto?.enum;
  addCapabilities(loading, raw.capabilities, file);
}

/** The domain's gRPC package and its aliases, each ending in its version (v2beta1) so references can follow it. */
function readProtoPackage(loading: Loading, file: string, domain: string, proto: NonNullable<RawDomain['proto']>) {
  loading.model.proto.packages[domain] = proto.package;
  for (const alias of proto.aliases ?? [])
    if (!/\.v\d[a-z0-9]*$/.test(alias) || alias === proto.package)
      loading.problems.push(
        `${file}: /proto/aliases: ${alias} must be another package ending in its version (v2beta1)`,
      );
  if (proto.aliases?.length) loading.model.proto.aliases[domain] = proto.aliases;
}

/** The domain's v1 package over gRPC (generator/proto-v1.ts checks it). */
function readV1Proto(model: ApiModel, raw: RawDomain): void {
  if (raw.v1Proto) model.proto.v1[raw.domain] = raw.v1Proto;
}

/** core: a file of an included framework module, which the spec's file of the same domain may add to. */
function readDomain(loading: Loading, file: string, core: boolean): void {
  const { model, problems, origin } = loading;
  const read = readYaml(file, problems);
  const raw = core ? withCoreNames(read, loading.coreNames) : read;
  if (raw === undefined) return;
  if (!validateDomain(raw)) {
    for (const e of validateDomain.errors ?? []) problems.push(`${file}: ${describe(e)}`);
    return;
  }
  const adding = !core && loading.coreDomains.delete(raw.domain);
  if (core) loading.coreDomains.add(raw.domain);
  if (model.domains.includes(raw.domain) && !adding)
    problems.push(`${file}: /domain: "${raw.domain}" is declared twice`);
  if (raw.capabilities) addCapabilities(loading, raw.capabilities, file);
  if (!adding) model.domains.push(raw.domain);
  // A domain's problems name the last file that declared it: the spec's own, where it adds to a module.
  loading.domainOrigin.set(raw.domain, file);
  model.domainTitles[raw.domain] = raw.title;
  if (raw.proto) readProtoPackage(loading, file, raw.domain, raw.proto);
  readV1Proto(model, raw);
  raw.resources.forEach((r, i) => {
    const at = `${file}: /resources/${i}`;
    if (model.resources[r.collection]) {
      // Both places: files load in name order, so the first may be the one the author did not touch.
      problems.push(`${at}/collection: "${r.collection}" is also declared in ${origin.get(r.collection)}; rename one`);
      return;
    }
    origin.set(r.collection, at);
    model.resources[r.collection] = toResource(raw.domain, r, at, problems);
  });
  readEndpoints(loading, raw, file);
}

function readEndpoints({ model, problems, endpointOrigin }: Loading, raw: RawDomain, file: string): void {
  for (const [j, e] of (raw.endpoints ?? []).entries()) {
    endpointOrigin.push(`${file}: /endpoints/${j}`);
    if (e.unimplemented && e.proto)
      problems.push(`${file}: /endpoints/${j}/proto: an unimplemented call is not declared over gRPC (remove proto)`);
    model.endpoints.push({
      domain: raw.domain,
      name: e.name,
      method: e.method,
      path: e.path,
      ...(e.version ? { version: e.version } : {}),
      ...(e.prefix ? { prefix: e.prefix } : {}),
      capability: capability(e.capability),
      scope: e.scope,
      ...(e.lists ? { lists: e.lists } : {}),
      ...(e.listQuery ? { listQuery: true } : {}),
      query: e.query ?? {},
      body: e.body,
      response: normalizeFields(e.response),
      event: e.event,
      ...(e.unimplemented ? { unimplemented: e.unimplemented } : {}),
      ...(e.proto ? { proto: { ...e.proto, request: normalizeRequest(e.proto.request)! } } : {}),
    });
  }
}

function resolveVocabulary(model: ApiModel, renamed: Record<string, string>): void {
  const vocabulary = Object.keys(model.capabilities);
  for (const r of Object.values(model.resources)) {
    resolveCapabilityValues(r.fields, vocabulary, renamed);
    resolveCapabilityValues(r.presents, vocabulary, {});
    for (const sub of r.subresources) resolveCapabilityValues(sub.fields, vocabulary, {});
  }
  for (const e of model.endpoints)
    for (const fields of [e.query, e.body, e.response]) resolveCapabilityValues(fields, vocabulary, {});
}

/** Parents know their children; parents, references and creator roles name what exists. */
function linkResources({ model, problems, origin }: Loading): void {
  for (const r of Object.values(model.resources)) {
    const at = origin.get(r.collection)!;
    if (r.parent) {
      const parent = model.resources[r.parent];
      if (!parent) problems.push(`${at}/parent: no resource has the collection "${r.parent}"`);
      else parent.children.push(r.collection);
    }
    if (r.uid === 'parent' && !r.parent) problems.push(`${at}/uid: "parent" needs a parent`);
    for (const [name, f] of Object.entries(r.fields)) {
      if (f.references && !model.resources[f.references])
        problems.push(`${at}/fields/${name}/references: no resource has the collection "${f.references}"`);
      if (f.requires && !model.capabilities[f.requires])
        problems.push(`${at}/fields/${name}/requires: unknown capability ${f.requires}`);
      if (f.protects && !f.requires) problems.push(`${at}/fields/${name}/protects: needs requires`);
      for (const other of f.protects ?? [])
        if (!r.fields[other]) problems.push(`${at}/fields/${name}/protects: no field "${other}"`);
    }
  }
  for (const r of Object.values(model.resources)) r.children.sort();
  for (const e of model.endpoints)
    linkRecordFields(model, e.response, `endpoint ${e.domain}.${e.name}: /response`, problems);
}

/** A response field holding a record (`resource: groups`) gets the fields that record is shown with. */
function linkRecordFields(model: ApiModel, fields: Record<string, FieldModel>, at: string, problems: string[]): void {
  for (const [name, f] of Object.entries(fields)) {
    if (!f.resource) continue;
    const r = model.resources[f.resource];
    if (!r) problems.push(`${at}/${name}/resource: no resource has the collection "${f.resource}"`);
    else if (f.type !== 'object' || f.fields) problems.push(`${at}/${name}/resource: needs type object and no fields`);
    else
      f.fields = Object.fromEntries(
        Object.entries({ ...standardFields, ...r.fields }).filter(([, field]) => !field.inputOnly),
      );
  }
}

function checkEndpoints({ model, problems, endpointOrigin }: Loading): void {
  const names = new Map<string, string>();
  for (const [i, e] of model.endpoints.entries()) {
    const key = `${e.domain}.${e.name}`;
    const at = endpointOrigin[i];
    if (names.has(key)) problems.push(`${at}/name: endpoint ${key} is also declared in ${names.get(key)}`);
    names.set(key, at);
    const params = [...e.path.matchAll(/\{(\w+)\*?\}/g)].map((m) => m[1]);
    if (e.scope && !params.includes(e.scope))
      problems.push(`${at}/scope: "${e.scope}" is not a path parameter of ${e.path}`);
    const listed = e.lists === undefined ? undefined : model.resources[e.lists];
    if (e.lists !== undefined && !listed) problems.push(`${at}/lists: no resource has the collection "${e.lists}"`);
    if (e.listQuery && listed && !listed.operations.list) problems.push(`${at}/listQuery: ${e.lists} has no list`);
  }
}

function addBuiltInRoles({ model, problems, grants, access, origin, accessFile }: Loading): void {
  for (const [i, role] of (access?.roles ?? []).entries()) {
    const caps = new Set([...role.capabilities, ...(grants.get(role.name)?.keys() ?? [])]);
    role.capabilities.forEach((c, j) => {
      if (!model.capabilities[c])
        problems.push(`${accessFile}: /roles/${i}/capabilities/${j}: unknown capability ${c}`);
    });
    model.roles.push({
      uid: builtInRoleUid(role.name),
      name: role.name,
      description: role.description,
      capabilities: [...caps].sort(),
      bootstrap: role.bootstrap ?? false,
    });
  }
  for (const r of Object.values(model.resources)) {
    if (r.creatorRole && !model.roles.some((x) => x.name === r.creatorRole))
      problems.push(`${origin.get(r.collection)}/creatorRole: no built-in role "${r.creatorRole}"`);
  }
  const known = model.roles.map((r) => r.name);
  for (const [role, granted] of grants)
    if (!known.includes(role))
      for (const at of granted.values())
        problems.push(`${at}: no built-in role "${role}" (access.yaml declares ${known.join(', ')})`);
}

/** A default or an example must be what the field itself would accept, else it is stored and served as it is. */
export function valueProblem(f: FieldModel, value: unknown): string | undefined {
  const one = (v: unknown): string | undefined => {
    if (f.type === 'enum') return f.values?.includes(v as string) ? undefined : `is not one of ${f.values?.join(', ')}`;
    if (f.type === 'string' || f.type === 'timestamp' || f.type === 'duration')
      return typeof v === 'string' ? undefined : 'is not a string';
    if (f.type === 'bool') return typeof v === 'boolean' ? undefined : 'is not true or false';
    if (f.type === 'int32' || f.type === 'int64')
      return Number.isInteger(v) || (f.type === 'int64' && typeof v === 'string' && /^-?\d+$/.test(v))
        ? undefined
        : 'is not a whole number';
    if (f.type === 'double') return typeof v === 'number' ? undefined : 'is not a number';
    return undefined;
  };
  if (f.repeated) return Array.isArray(value) ? value.map(one).find(Boolean) : 'is not a list';
  return one(value);
}

/**
 * One name per field on every wire: the JSON name is the key, the proto field and the SQL column are its
 * snake_case, so `fooBar` and `foo_bar` (or a proto name given twice) would be one column and one proto field.
 * Defaults and examples must be values of their field.
 */
/** The columns and wire names the server keeps for every record: no declared field may take one. */
const standardColumns = new Map(['uid', 'parentUid', 'createTime', 'updateTime'].map((n) => [snakeCase(n), n]));

function checkFieldDeclarations(fields: Record<string, FieldModel>, at: string, problems: string[], top = true): void {
  const snake = new Map<string, string>();
  const proto = new Map<string, string>();
  for (const [name, f] of Object.entries(fields)) {
    const wire = snakeCase(name);
    const standard = top && !(name in standardFields) ? standardColumns.get(wire) : undefined;
    if (standard) problems.push(`${at}/${name}: its column and wire name ${wire} are the server's own (${standard})`);
    const twin = snake.get(wire);
    if (twin !== undefined && twin !== name)
      problems.push(`${at}/${name}: its column and proto name ${wire} are also those of ${twin}; rename one`);
    snake.set(wire, name);
    if (f.proto) {
      const protoName = f.proto.name ?? wire;
      const other = proto.get(protoName);
      if (other !== undefined) problems.push(`${at}/${name}/proto: the proto name ${protoName} is also ${other}'s`);
      proto.set(protoName, name);
    }
    for (const key of ['default', 'example'] as const) {
      const wrong = f[key] === undefined ? undefined : valueProblem(f, f[key]);
      if (wrong) problems.push(`${at}/${name}/${key}: ${JSON.stringify(f[key])} ${wrong}`);
    }
    const fill = typeof f.existingRows === 'object' ? f.existingRows.default : undefined;
    const wrongFill = fill === undefined ? undefined : valueProblem(f, fill);
    if (wrongFill) problems.push(`${at}/${name}/existingRows/default: ${JSON.stringify(fill)} ${wrongFill}`);
    if (f.fields) checkFieldDeclarations(f.fields, `${at}/${name}/fields`, problems, false);
    if (f.mapValue?.fields) checkFieldDeclarations(f.mapValue.fields, `${at}/${name}/mapValue/fields`, problems, false);
  }
}

/** Every capability an operation needs, and where it is needed. */
function capabilitiesUsed(model: ApiModel): [string, Capability][] {
  const ofResource = (r: ResourceModel): [string, Capability][] => [
    ...Object.entries(r.operations).map(([op, o]): [string, Capability] => [
      `resource ${r.collection}: /operations/${op}`,
      o!.capability,
    ]),
    ...Object.entries(r.v1?.operations ?? {}).map(([op, o]): [string, Capability] => [
      `resource ${r.collection}: /v1/operations/${op}`,
      o!.capability,
    ]),
    ...r.subresources.flatMap((s): [string, Capability][] => [
      [`resource ${r.collection}: /subresources/${s.name}/get`, s.get.capability],
      ...(s.update
        ? [[`resource ${r.collection}: /subresources/${s.name}/update`, s.update.capability] as [string, Capability]]
        : []),
    ]),
  ];
  return [
    ...Object.values(model.resources).flatMap(ofResource),
    ...model.endpoints.map((e): [string, Capability] => [`endpoint ${e.domain}.${e.name}`, e.capability]),
  ];
}

function checkCapabilitiesUsed({ model, problems, origin, endpointOrigin }: Loading): void {
  // Named in the file that holds the mistake: "resource c: /path" and "endpoint d.n" become "file: /resources/i/path".
  const at = (where: string) =>
    where
      .replace(/^resource (\S+): /, (_, c: string) => origin.get(c) ?? `resource ${c}: `)
      .replace(
        /^endpoint (\S+)\.(\S+)$/,
        (x, d: string, n: string) =>
          endpointOrigin[model.endpoints.findIndex((e) => e.domain === d && e.name === n)] ?? x,
      );
  for (const [where, cap] of capabilitiesUsed(model).map(([w, c]): [string, Capability] => [at(w), c])) {
    if (cap === 'none' || cap === 'authenticated') continue;
    for (const c of cap)
      if (!model.capabilities[c]) problems.push(`${where}: unknown capability ${c} (declare it under capabilities:)`);
  }
}

const notScalar = (f: FieldModel) => !!f.repeated || f.type === 'object' || f.type === 'map';

function checkFields(r: RawResource, at: string, problems: string[]): void {
  if (r.presents && !r.presenter) problems.push(`${at}/presents: only a resource with a presenter presents fields`);
  // A presented field is shown beside the stored ones: one JSON and proto name for two would hide one of them.
  const stored = new Map(Object.keys(r.fields).map((n) => [snakeCase(n), n]));
  for (const name of Object.keys(r.presents ?? {}))
    if (stored.has(snakeCase(name)))
      problems.push(
        `${at}/presents/${name}: its wire name ${snakeCase(name)} is also the field ${stored.get(snakeCase(name))}'s`,
      );
  for (const [name, f] of Object.entries(r.fields)) {
    if (name in standardFields) problems.push(`${at}/fields/${name}: is a standard field, declared by the server`);
    if (f.setOnCreate && (f.type !== 'timestamp' || !f.outputOnly || f.repeated))
      problems.push(`${at}/fields/${name}/setOnCreate: only for an output-only timestamp`);
    if (f.setToCreator && (f.type !== 'string' || !f.outputOnly || f.repeated))
      problems.push(`${at}/fields/${name}/setToCreator: only for an output-only string`);
  }
  checkNamedFields(r, at, problems);
  if (r.uid === 'parent' && r.parentOptional) problems.push(`${at}/uid: "parent" cannot combine with parentOptional`);
}

/** The names a resource's declarations give are its fields (or, where they may be, standard ones or its parent). */
function checkNamedFields(r: RawResource, at: string, problems: string[]): void {
  const named: [string[], string, boolean][] = [
    [(r.indexes ?? []).flat().filter((f) => f !== 'parent'), 'indexes', true],
    [r.eventFields ?? [], 'eventFields', true],
    [[...(r.upsertOn ? [r.upsertOn] : []), ...(r.exclusive ?? []).flat()], 'upsertOn or exclusive', false],
  ];
  for (const [names, by, standard] of named)
    for (const f of names)
      if (!r.fields[f] && !(standard && f in standardFields)) problems.push(`${at}: no field "${f}" (named by ${by})`);
}

/** What a filter's match cannot do with its field's type: a substring of a non-text, an order of no order. */
function matchProblem(match: FilterModel['match'], f: FieldModel): string | undefined {
  if (match === 'contains' && f.type !== 'string') return 'contains looks for text in a string field';
  if ((match === 'atLeast' || match === 'atMost') && (f.type === 'bool' || f.type === 'enum'))
    return 'a range needs an ordered type (numbers, times, strings)';
  return undefined;
}

function checkFilters(r: RawResource, all: Record<string, FieldModel>, at: string, problems: string[]): void {
  const filters = r.filters ?? [];
  filters.forEach((flt, j) => {
    if (flt.field === 'parent') {
      if (!r.parent) problems.push(`${at}/filters/${j}/field: "parent" needs a parent`);
      return;
    }
    const named =
      flt.field !== undefined ? [flt.field] : Object.values(flt.fields ?? {}).filter((n): n is string => n !== null);
    for (const name of named) {
      const field = all[name];
      if (!field) problems.push(`${at}/filters/${j}: no field "${name}"`);
      else if (field.inputOnly && field.outputOnly)
        problems.push(`${at}/filters/${j}/field: "${name}" is never returned: a filter on it would tell its values`);
      else if (flt.match !== 'set' && notScalar(field))
        problems.push(`${at}/filters/${j}/field: "${name}" is not a scalar field`);
      else if (matchProblem(flt.match, field))
        problems.push(
          `${at}/filters/${j}/match: ${flt.match} on "${name}" (${field.type}): ${matchProblem(flt.match, field)}`,
        );
    }
  });
  const params = [...filters.map((f) => f.param), ...(r.unservedFilters ?? [])];
  const paths = [
    ...filters.map((_, j) => `${at}/filters/${j}/param`),
    ...params.slice(filters.length).map((_, k) => `${at}/unservedFilters/${k}`),
  ];
  // One name in the query and in the list request message: the snake_case of each, and none of every list's own.
  const wire = params.map((p) => snakeCase(p));
  for (const [i, name] of params.entries()) {
    const twin = wire.indexOf(wire[i]);
    if (params.indexOf(name) < i) problems.push(`${at}: the list parameter "${name}" is declared twice`);
    else if (twin < i)
      problems.push(`${paths[i]}: "${name}" and "${params[twin]}" are one parameter on the wire (${wire[i]})`);
    if (listOwn.has(wire[i]) || wire[i].startsWith('uidp'))
      problems.push(`${paths[i]}: "${name}" is a parameter of every list (${[...listOwn].join(', ')}, uidp.*)`);
  }
}

/** The parameters every list takes, by their wire name. */
const listOwn = new Set(['page_size', 'page_token', 'order_by', 'skip']);

function orderOf(
  r: RawResource,
  all: Record<string, FieldModel>,
  at: string,
  problems: string[],
): Pick<ResourceModel, 'orderBy' | 'defaultOrder'> {
  const orderBy: Record<string, string> = { ...(r.orderBy ?? {}), uid: 'uid' };
  for (const [key, field] of Object.entries(orderBy)) {
    const f = all[field];
    if (!f) problems.push(`${at}/orderBy/${key}: no field "${field}"`);
    else if (notScalar(f)) problems.push(`${at}/orderBy/${key}: "${field}" is not sortable`);
  }
  const [orderKey, direction] = (r.defaultOrder ?? 'uid').split(' ');
  if (!(orderKey in orderBy)) problems.push(`${at}/defaultOrder: "${orderKey}" is not in orderBy`);
  return { orderBy, defaultOrder: { key: orderKey, desc: direction === 'desc' } };
}

function checkNaturalKey(r: RawResource, all: Record<string, FieldModel>, at: string, problems: string[]): void {
  for (const k of r.naturalKey ?? []) {
    const f = all[k];
    if (k === 'parent' ? !r.parent : !f || k === 'uid') problems.push(`${at}/naturalKey: no field "${k}"`);
    else if (f && notScalar(f)) problems.push(`${at}/naturalKey: "${k}" is not a scalar field`);
  }
  // A record's uid is under its parent: a record found by its key must be found under the same parent.
  if (r.naturalKey && r.parent && !r.naturalKey.includes('parent'))
    problems.push(`${at}/naturalKey: must include parent`);
}

function operationsOf(
  r: RawResource,
  at: string,
  problems: string[],
): { ops: ResourceModel['operations']; listPath?: string } {
  const ops: ResourceModel['operations'] = {};
  let listPath: string | undefined;
  for (const [name, op] of Object.entries(r.operations)) {
    if (op.path && name !== 'list') problems.push(`${at}/operations/${name}/path: only list takes a path`);
    if (op.path) {
      if (!op.path.includes('{parent}')) problems.push(`${at}/operations/list/path: must contain {parent}`);
      if (!r.parent) problems.push(`${at}/operations/list/path: a nested list needs a parent`);
      listPath = op.path;
    }
    const proto = normalizeOperation(op.proto);
    ops[name as keyof ResourceModel['operations']] = {
      capability: capability(op.capability),
      event: op.event,
      ...(proto ? { proto } : {}),
    };
  }
  if (r.readOnly && (ops.create || ops.update || ops.delete))
    problems.push(`${at}/operations: a readOnly resource has no create, update or delete`);
  return { ops, listPath };
}

/** What a resource is when its declaration leaves something out. */
const resourceDefaults = () => ({
  parentOptional: false,
  uid: 'generated' as const,
  onParentDelete: 'restrict' as const,
  readOnly: false,
  publicRootRecords: false,
  exclusive: [] as string[][],
  unservedFilters: [] as string[],
  filters: [] as ResourceModel['filters'],
  subresources: [] as NonNullable<RawResource['subresources']>,
});

function toResource(domain: string, r: RawResource, at: string, problems: string[]): ResourceModel {
  const all = { ...standardFields, ...r.fields };
  checkFields(r, at, problems);
  checkFilters(r, all, at, problems);
  checkNaturalKey(r, all, at, problems);
  const { ops, listPath } = operationsOf(r, at, problems);
  const given = { ...resourceDefaults(), ...r };
  return {
    domain,
    type: r.type,
    collection: r.collection,
    path: r.path ?? r.collection,
    listPath,
    parent: r.parent,
    parentOptional: given.parentOptional,
    uid: given.uid,
    onParentDelete: given.onParentDelete,
    readOnly: given.readOnly,
    naturalKey: r.naturalKey,
    publicRootRecords: given.publicRootRecords,
    creatorRole: r.creatorRole,
    presenter: r.presenter,
    ...(r.timestamps ? { timestamps: r.timestamps } : {}),
    ...(r.presents ? { presents: normalizeFields(r.presents) } : {}),
    onCreate: r.onCreate,
    ...(r.eventFields ? { eventFields: r.eventFields } : {}),
    ...(r.indexes ? { indexes: r.indexes.map((i) => i.map((k) => (k === 'parent' ? 'parentUid' : k))) } : {}),
    upsertOn: r.upsertOn,
    ...batchCreateOf(r, at, problems),
    ...batchDeleteOf(r, at, problems),
    exclusive: given.exclusive,
    fields: normalizeFields(r.fields),
    filters: given.filters,
    unservedFilters: given.unservedFilters,
    ...orderOf(r, all, at, problems),
    operations: ops,
    subresources: given.subresources.map((s) => ({
      name: s.name,
      type: s.type ?? `${r.type}${s.name[0].toUpperCase()}${s.name.slice(1)}`,
      fields: normalizeFields(s.fields),
      get: { capability: capability(s.get.capability), event: s.get.event },
      update: s.update && { capability: capability(s.update.capability), event: s.update.event },
      ...(s.proto ? { proto: s.proto } : {}),
    })),
    children: [],
    v1: r.v1 && toV1(r.v1, all, given.filters, ops, given.readOnly, `${at}/v1`, problems, given.subresources),
    ...(r.proto ? { proto: r.proto } : {}),
  };
}

/** A batch create is creates: it needs the create operation, and shares only declared, writable fields. */
function batchCreateOf(r: RawResource, at: string, problems: string[]): Pick<ResourceModel, 'batchCreate'> {
  if (!r.batchCreate) return {};
  if (!r.operations.create) problems.push(`${at}/batchCreate: needs operations.create (each item is a create)`);
  const shared = r.batchCreate.shared ?? [];
  for (const name of shared)
    if (!r.fields[name] || r.fields[name].outputOnly)
      problems.push(`${at}/batchCreate/shared: ${name} is not a writable field of ${r.type}`);
  return { batchCreate: { max: r.batchCreate.max ?? 25, shared } };
}

/** A batch delete is deletes: it needs the delete operation. */
function batchDeleteOf(r: RawResource, at: string, problems: string[]): Pick<ResourceModel, 'batchDelete'> {
  if (!r.batchDelete) return {};
  if (!r.operations.delete) problems.push(`${at}/batchDelete: needs operations.delete (each item is a delete)`);
  if (!r.parent) problems.push(`${at}/batchDelete: needs a parent (a batch deletes records of one parent)`);
  return { batchDelete: { max: r.batchDelete.max ?? 100 } };
}

/**
 * `values: $capabilities` becomes the capability vocabulary, so that no list of capabilities is written twice; a
 * stored field of it takes access.yaml's renamedCapabilities as its renamedValues (the schema lock's, for stored
 * roles holding a removed capability), where the author of the vocabulary declares them.
 */
function resolveCapabilityValues(
  fields: Record<string, FieldModel> | undefined,
  vocabulary: string[],
  renamed: Record<string, string>,
): void {
  for (const f of Object.values(fields ?? {})) {
    if ((f.values as unknown) === '$capabilities') {
      f.values = vocabulary;
      if (Object.keys(renamed).length > 0) f.renamedValues = { ...renamed, ...f.renamedValues };
    }
    resolveCapabilityValues(f.fields, vocabulary, renamed);
    if (f.mapValue) resolveCapabilityValues({ value: f.mapValue }, vocabulary, renamed);
  }
}

/** The field a dotted path names, through nested objects. */
function fieldAt(fields: Record<string, FieldModel>, path: string): FieldModel | undefined {
  const [head, ...rest] = path.split('.');
  const f = fields[head];
  return rest.length === 0 || !f ? f : fieldAt(f.fields ?? {}, rest.join('.'));
}

/** v1's JSON names of the top-level fields: a renamed one must not be another field's. */
function checkV1Wire(renames: Record<string, string>, all: Record<string, FieldModel>, at: string, problems: string[]) {
  const v1Names = new Map<string, string>();
  for (const name of Object.keys(all)) {
    const v1Name = renames[name] ?? name;
    const other = v1Names.get(v1Name);
    // named at the rename, whichever of the two comes first
    const [renamed, kept] = renames[name] !== undefined ? [name, other] : [other, name];
    if (other !== undefined) problems.push(`${at}/fields/${renamed}: the v1 name ${v1Name} is also ${kept}'s`);
    v1Names.set(v1Name, name);
  }
}

/** v1's renames name fields, enum values and list parameters that v2 has. */
function checkV1Names(
  v1: NonNullable<RawResource['v1']>,
  all: Record<string, FieldModel>,
  filters: ResourceModel['filters'],
  at: string,
  problems: string[],
): void {
  for (const path of Object.keys(v1.fields ?? {}))
    if (!fieldAt(all, path)) problems.push(`${at}/fields/${path}: no field "${path}"`);
  checkV1Wire(v1.fields ?? {}, all, at, problems);
  for (const [path, values] of Object.entries(v1.values ?? {})) {
    const f = fieldAt(all, path);
    if (f?.type !== 'enum') problems.push(`${at}/values/${path}: not an enum field`);
    else
      for (const v of Object.keys(values))
        if (!f.values?.includes(v)) problems.push(`${at}/values/${path}/${v}: not a value of the enum`);
  }
  for (const [name, param] of Object.entries(v1.params ?? {})) {
    if (!filters.some((f) => f.param === param))
      problems.push(`${at}/params/${name}: "${param}" is not a filter of the v2 list`);
  }
}

function toV1(
  v1: NonNullable<RawResource['v1']>,
  all: Record<string, FieldModel>,
  filters: ResourceModel['filters'],
  ops: ResourceModel['operations'],
  readOnly: boolean,
  at: string,
  problems: string[],
  subresources: NonNullable<RawResource['subresources']>,
): V1Model {
  checkV1Names(v1, all, filters, at, problems);
  if (v1.paged && !ops.list) problems.push(`${at}/paged: the resource has no list`);
  const operations: V1Model['operations'] = {};
  for (const [name, op] of Object.entries(v1.operations ?? {})) {
    const key = name as keyof V1Model['operations'];
    if (ops[key]) problems.push(`${at}/operations/${name}: v2 has this operation already; v1 serves it as it is`);
    operations[key] = { capability: capability(op.capability), event: op.event };
  }
  if (readOnly && Object.keys(operations).length > 0)
    problems.push(`${at}/operations: a readOnly resource has no writes`);
  const given = { fields: {}, values: {}, params: {}, paged: false, ...v1 };
  return {
    collection: v1.collection,
    fields: given.fields,
    values: given.values,
    params: given.params,
    paged: given.paged,
    createRequest: v1.createRequest,
    subresourceFields: v1SubresourceFields(
      v1.subresourceFields ?? {},
      all,
      subresources,
      `${at}/subresourceFields`,
      problems,
    ),
    operations,
  };
}

/** v1 fields held by a subresource: each names an updatable subresource's field, and no field of the record. */
function v1SubresourceFields(
  given: Record<string, string>,
  all: Record<string, FieldModel>,
  subresources: NonNullable<RawResource['subresources']>,
  at: string,
  problems: string[],
): V1Model['subresourceFields'] {
  const out: V1Model['subresourceFields'] = {};
  for (const [name, path] of Object.entries(given)) {
    const [subresource, field, ...rest] = path.split('.');
    const s = subresources.find((x) => x.name === subresource);
    if (!s?.update || !field || rest.length > 0 || !(field in s.fields))
      problems.push(`${at}/${name}: "${path}" is not <an updatable subresource>.<its field>`);
    else if (name in all) problems.push(`${at}/${name}: the record has a field of that name`);
    else out[name] = { subresource, field };
  }
  return out;
}
