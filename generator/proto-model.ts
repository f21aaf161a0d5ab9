// The gRPC surface the spec declares: packages of messages, enums and services, and for each rpc where its request
// fields go in the one pipeline's Call. emit-proto.ts prints it; generated/grpc.ts wires it to the runtime.
import type {
  ApiModel,
  EndpointModel,
  FieldModel,
  ProtoFieldModel,
  ProtoReserved,
  ProtoStandardNumbers,
  ResourceModel,
} from '../runtime/model/api-model.js';
import { filterField } from '../runtime/model/api-model.js';
import type { RpcKind, RpcRoute, V1Http } from '../runtime/grpc/rpc.js';
import { lowerCamelCase as lowerCamel, snakeCase } from '../runtime/model/field-names.js';
import { parentField } from './spec-proto.js';
import { addV1Packages } from './proto-v1.js';

export interface ProtoFieldDecl {
  name: string;
  number: number;
  /** a scalar, or the full name of a message or enum */
  type: string;
  label?: 'repeated' | 'optional';
  /** map<key, type> */
  mapKey?: string;
  oneof?: string;
  jsonName?: string;
}
export interface ProtoMessageDecl {
  name: string;
  fields: ProtoFieldDecl[];
  reserved?: ProtoReserved;
}
export interface ProtoEnumDecl {
  name: string;
  values: { name: string; number: number }[];
}
export interface RpcDecl extends RpcRoute {
  service: string;
  name: string;
  kind: RpcKind;
  resource?: ResourceModel;
  subresource?: string;
  endpoint?: EndpointModel;
  /** served by an adapter of its own (the token service), so in the .proto but not in the rpc table */
  external?: true;
  /** a v1 rpc: the v1 HTTP route it is transcoded to (generator/proto-v1.ts) */
  v1?: V1Http;
}
export interface ProtoSurface {
  messages: Map<string, ProtoMessageDecl>;
  enums: Map<string, ProtoEnumDecl>;
  rpcs: RpcDecl[];
  /** package of every message, enum and service declared */
  packages: Set<string>;
  /** the :path of every v1 rpc not served (a structured UNIMPLEMENTED) */
  v1Unimplemented: string[];
}

const timestamp = 'google.protobuf.Timestamp';
const scalars: Partial<Record<FieldModel['type'], string>> = {
  string: 'string',
  bool: 'bool',
  int32: 'int32',
  int64: 'int64',
  double: 'double',
  timestamp,
  duration: 'google.protobuf.Duration',
};
const pascal = (s: string) => s[0].toUpperCase() + s.slice(1);

/** The full name of a type the spec names: a full name as it is, else relative to the package. */
function resolve(pkg: string, name: string): string {
  return /^[a-z]/.test(name) ? name : `${pkg}.${name}`;
}

class SurfaceBuilder {
  readonly surface: ProtoSurface = {
    messages: new Map(),
    enums: new Map(),
    rpcs: [],
    packages: new Set(),
    v1Unimplemented: [],
  };

  constructor(
    private readonly model: ApiModel,
    private readonly problems: string[],
  ) {}

  private addMessage(m: ProtoMessageDecl): void {
    const known = this.surface.messages.get(m.name);
    if (known && JSON.stringify(known) !== JSON.stringify(m))
      this.problems.push(`proto message ${m.name} is declared twice, differently`);
    this.surface.messages.set(m.name, m);
  }

  private addEnum(e: ProtoEnumDecl): void {
    const known = this.surface.enums.get(e.name);
    if (known && JSON.stringify(known) !== JSON.stringify(e))
      this.problems.push(`proto enum ${e.name} is declared twice, differently`);
    this.surface.enums.set(e.name, e);
  }

  private enumOf(name: string, values: string[]): string {
    if (name === this.model.proto.capabilities?.enum) return name;
    // proto3 cannot tell value 0 from a field left unset: it must mean unset.
    if (!/(^|_)(UNSPECIFIED|UNKNOWN)$/.test(values[0] ?? ''))
      this.problems.push(
        `proto enum ${name}: its first value (0, what an unset field reads as) must be <NAME>_UNSPECIFIED, not ${values[0]}`,
      );
    this.addEnum({ name, values: values.map((v, number) => ({ name: v, number })) });
    return name;
  }

  /** The wire type of a spec field; object and enum fields declare their messages and enums on the way. */
  private typeOf(pkg: string, owner: string, key: string, f: FieldModel, p: ProtoFieldModel): string {
    if (p.scalar) return p.scalar;
    if (f.resource) {
      const r = this.model.resources[f.resource];
      return resolve(this.model.proto.packages[r.domain], r.proto?.message ?? r.type);
    }
    if (f.type === 'object') {
      const name = resolve(pkg, p.type ?? `${owner.slice(pkg.length + 1)}.${pascal(key)}`);
      this.message(pkg, name, f.fields ?? {});
      return name;
    }
    // A string that travels as a well-known message (an endpoint's update_mask as google.protobuf.FieldMask).
    if (f.type === 'string' && p.type) return resolve(pkg, p.type);
    if (f.type === 'enum') return this.enumOf(resolve(pkg, p.type ?? pascal(key)), f.values ?? []);
    return scalars[f.type]!;
  }

  private fieldDecl(pkg: string, owner: string, key: string, f: FieldModel, p: ProtoFieldModel): ProtoFieldDecl {
    const name = p.name ?? snakeCase(key);
    const decl: ProtoFieldDecl = { name, number: p.number, type: '' };
    if (f.type === 'map') {
      decl.mapKey = p.key ?? 'string';
      decl.type = this.typeOf(pkg, owner, key, f.mapValue!, p);
    } else {
      decl.type = this.typeOf(pkg, owner, key, f, p);
      if (f.repeated) decl.label = 'repeated';
    }
    if (p.optional) decl.label = 'optional';
    if (p.oneof) decl.oneof = p.oneof;
    if (lowerCamel(name) !== key) decl.jsonName = key;
    return decl;
  }

  /** A message of spec fields: those with a proto number, and the standard fields it numbers. */
  message(
    pkg: string,
    name: string,
    fields: Record<string, FieldModel>,
    numbers: ProtoStandardNumbers = {},
    reserved?: ProtoReserved,
  ): string {
    const decls: ProtoFieldDecl[] = [];
    if (numbers.uid) decls.push({ name: 'uid', number: numbers.uid, type: 'string' });
    if (numbers.createTime) decls.push({ name: 'create_time', number: numbers.createTime, type: timestamp });
    if (numbers.updateTime) decls.push({ name: 'update_time', number: numbers.updateTime, type: timestamp });
    for (const [key, f] of Object.entries(fields)) if (f.proto) decls.push(this.fieldDecl(pkg, name, key, f, f.proto));
    decls.sort((a, b) => a.number - b.number);
    this.addMessage({ name, fields: decls, ...(reserved ? { reserved } : {}) });
    return name;
  }

  private rpc(decl: Omit<RpcDecl, 'path'>): void {
    this.surface.rpcs.push({ ...decl, path: `/${decl.service}/${decl.name}` });
  }

  capabilities(): void {
    const c = this.model.proto.capabilities;
    if (!c) return;
    const values = Object.entries(this.model.capabilities)
      .filter(([, m]) => m.proto !== undefined)
      .map(([name, m]) => ({ name, number: m.proto! }));
    this.addEnum({ name: c.enum, values: [{ name: c.unspecified, number: 0 }, ...values] });
  }

  /**
   * The token service, numbered as the reference's oidc package: Exchange trades another issuer's token (the
   * bearer) for one of ours, as POST /sts/exchange does; runtime/grpc/token-service.ts serves it.
   */
  tokenService(): void {
    const pkg = this.model.proto.tokenService;
    if (!pkg) return;
    const f = (name: string, number: number, type = 'string', repeated = false): ProtoFieldDecl => ({
      name,
      number,
      type,
      ...(repeated ? { label: 'repeated' as const } : {}),
    });
    this.addMessage({
      name: `${pkg}.ExchangeRequest`,
      fields: [
        f('aud', 1, 'string', true),
        f('scope', 2),
        f('identity', 4),
        f('cap', 5, 'string', true),
        f('identity_provider', 7),
        f('scopes', 8, 'string', true),
      ],
      reserved: { numbers: [3, 6], names: ['cluster', 'include_upstream_token'] },
    });
    this.addMessage({
      name: `${pkg}.RawToken`,
      fields: [f('token', 1), f('refresh_token', 2), f('expiry', 3, timestamp)],
    });
    this.addMessage({
      name: `${pkg}.ExchangeRefreshTokenRequest`,
      fields: [f('aud', 1, 'string', true), f('scope', 2), f('cap', 3, 'string', true), f('scopes', 4, 'string', true)],
    });
    this.addMessage({
      name: `${pkg}.TokenPair`,
      fields: [f('token', 1, `${pkg}.RawToken`), f('refresh_token', 2, `${pkg}.RawToken`)],
    });
    const service = `${pkg}.SecurityTokenService`;
    for (const [name, request, response] of [
      ['Exchange', 'ExchangeRequest', 'RawToken'],
      ['ExchangeRefreshToken', 'ExchangeRefreshTokenRequest', 'TokenPair'],
    ])
      this.rpc({
        service,
        name,
        kind: 'endpoint',
        request: `${pkg}.${request}`,
        response: `${pkg}.${response}`,
        fields: {},
        external: true,
      });
  }

  hierarchyFilter(): string {
    const name = this.model.proto.hierarchyFilter ?? 'chainguard.platform.common.UIDPFilter';
    const field = (n: string, number: number, type = 'string'): ProtoFieldDecl => ({ name: n, number, type });
    this.addMessage({
      name,
      fields: [
        field('ancestors_of', 1),
        field('descendants_of', 2),
        field('children_of', 3),
        field('in_root', 4, 'bool'),
        { ...field('ids', 5), label: 'repeated' },
      ],
    });
    return name;
  }

  resource(r: ResourceModel): void {
    if (!r.proto) return;
    const pkg = this.model.proto.packages[r.domain];
    const service = `${pkg}.${r.proto.service}`;
    const message = this.message(
      pkg,
      resolve(pkg, r.proto.message ?? r.type),
      { ...r.fields, ...r.presents },
      r.proto.numbers,
      r.proto.reserved,
    );
    const singular = snakeCase(message.split('.').pop()!).replace(/^_/, '');
    for (const kind of ['list', 'get', 'create', 'update', 'delete'] as const) {
      const op = r.operations[kind];
      if (!op) continue;
      const name = op.proto?.rpc ?? (kind === 'list' ? `List${pascal(r.collection)}` : `${pascal(kind)}${r.type}`);
      const request = `${pkg}.${name}Request`;
      const std = { service, name, kind, resource: r, request };
      if (kind === 'list') {
        this.listRequest(r, request, op.proto!.request!, op.proto!.reserved);
        const response = this.listResponse(r, pkg, name, message, op.proto?.response);
        this.rpc({ ...std, response, fields: this.listRouting(r, op.proto!.request!) });
      } else if (kind === 'get' || kind === 'delete') {
        this.addMessage({ name: request, fields: [{ name: 'uid', number: 1, type: 'string' }] });
        const response = kind === 'get' ? message : 'google.protobuf.Empty';
        this.rpc({ ...std, response, fields: { uid: { to: 'param', name: 'uid' } } });
      } else if (kind === 'create') {
        const fields: ProtoFieldDecl[] = [
          { name: 'parent', number: 1, type: 'string' },
          { name: singular, number: 2, type: message },
        ];
        this.addMessage({ name: request, fields });
        const routing = { parent: { to: 'param', name: 'parent' }, [lowerCamel(singular)]: { to: 'body', name: '' } };
        this.rpc({ ...std, response: message, fields: routing as RpcRoute['fields'] });
      } else {
        this.updateRpc({ ...std, response: message }, request, singular, message);
      }
    }
    for (const s of r.subresources) this.subresource(r, pkg, service, s);
    if (r.batchCreate && r.operations.create) this.batchCreateRpc(r, pkg, service, message);
    if (r.batchDelete) this.batchDeleteRpc(r, pkg, service, message);
  }

  /**
   * BatchCreate<Collection>: { parent = 1, requests = 2 (each a create's request), the shared fields from 3 in the
   * order the spec gives them }, answered { <collection> = 1 }, as the reference's BatchCreateRoleBindings is.
   */
  private batchCreateRpc(r: ResourceModel, pkg: string, service: string, message: string): void {
    const name = `BatchCreate${pascal(r.collection)}`;
    const request = `${pkg}.${name}Request`;
    const create = `${pkg}.${r.operations.create!.proto?.rpc ?? `Create${r.type}`}Request`;
    const shared = r.batchCreate!.shared.map((field, i) =>
      this.fieldDecl(pkg, request, field, r.fields[field], { number: 3 + i }),
    );
    this.addMessage({
      name: request,
      fields: [
        { name: 'parent', number: 1, type: 'string' },
        { name: 'requests', number: 2, type: create, label: 'repeated' },
        ...shared,
      ],
    });
    const response = `${pkg}.${name}Response`;
    this.addMessage({
      name: response,
      fields: [{ name: snakeCase(r.collection), number: 1, type: message, label: 'repeated' }],
    });
    const fields: RpcRoute['fields'] = Object.fromEntries(
      ['parent', 'requests', ...r.batchCreate!.shared].map((f) => [f, { to: 'body', name: f }]),
    );
    this.rpc({ service, name, kind: 'batchCreate', resource: r, request, response, fields });
  }

  /** BatchDelete<Collection>: { parent = 1, names = 2 }, answered { parent = 1, <collection> = 2 }. */
  private batchDeleteRpc(r: ResourceModel, pkg: string, service: string, message: string): void {
    const name = `BatchDelete${pascal(r.collection)}`;
    const request = `${pkg}.${name}Request`;
    this.addMessage({
      name: request,
      fields: [
        { name: 'parent', number: 1, type: 'string' },
        { name: 'names', number: 2, type: 'string', label: 'repeated' },
      ],
    });
    const response = `${pkg}.${name}Response`;
    this.addMessage({
      name: response,
      fields: [
        { name: 'parent', number: 1, type: 'string' },
        { name: snakeCase(r.collection), number: 2, type: message, label: 'repeated' },
      ],
    });
    const fields: RpcRoute['fields'] = { parent: { to: 'body', name: 'parent' }, names: { to: 'body', name: 'names' } };
    this.rpc({ service, name, kind: 'batchDelete', resource: r, request, response, fields });
  }

  private updateRpc(std: Omit<RpcDecl, 'path' | 'fields'>, request: string, singular: string, message: string): void {
    this.addMessage({
      name: request,
      fields: [
        { name: singular, number: 1, type: message },
        { name: 'update_mask', number: 2, type: 'google.protobuf.FieldMask' },
      ],
    });
    const fields: RpcRoute['fields'] = {
      [lowerCamel(singular)]: { to: 'body', name: '' },
      updateMask: { to: 'mask', name: '' },
    };
    this.rpc({ ...std, fields, bodyMessage: message });
  }

  private subresource(r: ResourceModel, pkg: string, service: string, s: ResourceModel['subresources'][number]): void {
    const message = this.message(pkg, resolve(pkg, s.proto?.message ?? s.type), s.fields, s.proto?.numbers);
    const rpcType = message.split('.').pop()!;
    const get = `Get${rpcType}`;
    this.addMessage({ name: `${pkg}.${get}Request`, fields: [{ name: 'uid', number: 1, type: 'string' }] });
    this.rpc({
      service,
      name: get,
      kind: 'subresourceGet',
      resource: r,
      subresource: s.name,
      request: `${pkg}.${get}Request`,
      response: message,
      fields: { uid: { to: 'param', name: 'uid' } },
    });
    if (!s.update) return;
    const name = `Update${rpcType}`;
    const singular = snakeCase(rpcType).replace(/^_/, '');
    const std = { service, name, kind: 'subresourceUpdate' as const, resource: r, subresource: s.name };
    this.updateRpc(
      { ...std, request: `${pkg}.${name}Request`, response: message },
      `${pkg}.${name}Request`,
      singular,
      message,
    );
  }

  /** A list request field: the hierarchy filter, paging, a filter (typed as its field), or an unserved filter. */
  private listFieldType(r: ResourceModel, field: string, p: ProtoFieldModel): Pick<ProtoFieldDecl, 'type' | 'label'> {
    const pkg = this.model.proto.packages[r.domain];
    if (field === 'uidp') return { type: this.hierarchyFilter() };
    if (field === 'page_size' || field === 'skip') return { type: 'int32' };
    if (p.scalar) return { type: p.scalar };
    const filter = r.filters.find((f) => snakeCase(f.param) === field);
    if (!filter) {
      if (!p.type) return { type: 'string' };
      return { type: p.values ? this.enumOf(resolve(pkg, p.type), p.values) : resolve(pkg, p.type) };
    }
    const f = filterField(r, filter);
    const declared = filter.field ? r.fields[filter.field]?.proto : undefined;
    const type =
      f.type === 'enum'
        ? this.enumOf(resolve(pkg, p.type ?? declared?.type ?? pascal(filter.param)), f.values ?? [])
        : this.typeOf(pkg, resolve(pkg, r.proto?.message ?? r.type), filter.param, f, { number: p.number });
    return filter.match === 'anyOf' ? { type, label: 'repeated' } : { type };
  }

  private listRequest(
    r: ResourceModel,
    name: string,
    numbers: Record<string, ProtoFieldModel>,
    reserved?: ProtoReserved,
  ) {
    const fields = Object.entries(numbers).map(([field, p]) => {
      const decl: ProtoFieldDecl = { name: field, number: p.number, ...this.listFieldType(r, field, p) };
      if (p.repeated) decl.label = 'repeated';
      if (p.optional) decl.label = 'optional';
      return decl;
    });
    fields.sort((a, b) => a.number - b.number);
    this.addMessage({ name, fields, ...(reserved ? { reserved } : {}) });
  }

  private listResponse(
    r: ResourceModel,
    pkg: string,
    rpc: string,
    message: string,
    declared?: Record<string, ProtoFieldModel>,
  ): string {
    const items = snakeCase(r.collection);
    const numbers = declared ?? {
      [items]: { number: 1 },
      next_page_token: { number: 2 },
      total_count: { number: 3, optional: true },
      skipped: { number: 4 },
    };
    const types: Record<string, string> = { next_page_token: 'string', total_count: 'int64', skipped: 'int32' };
    const fields = Object.entries(numbers).map(([name, p]): ProtoFieldDecl => {
      const decl: ProtoFieldDecl = { name, number: p.number, type: name === items ? message : types[name] };
      if (name === items) decl.label = 'repeated';
      if (p.optional) decl.label = 'optional';
      return decl;
    });
    if (!fields.some((f) => f.name === items))
      this.problems.push(`resource ${r.collection}: the list response has no ${items}`);
    const name = `${pkg}.${rpc}Response`;
    this.addMessage({ name, fields });
    return name;
  }

  /** Where a list request's fields go: the query parameters of the HTTP list, or the parent of a nested list. */
  private listRouting(r: ResourceModel, numbers: Record<string, ProtoFieldModel>): RpcRoute['fields'] {
    const out: RpcRoute['fields'] = {};
    const params = [...r.filters.map((f) => f.param), ...r.unservedFilters];
    for (const name of Object.keys(numbers)) {
      const json = lowerCamel(name);
      if (r.listPath && name === parentField(r)) out[json] = { to: 'param', name: 'parent' };
      else if (name === 'uidp') out[json] = { to: 'query', name: 'uidp.' };
      else out[json] = { to: 'query', name: params.find((p) => snakeCase(p) === name) ?? name };
    }
    return out;
  }

  endpoint(e: EndpointModel): void {
    if (!e.proto) return;
    const pkg = this.model.proto.packages[e.domain];
    const name = e.proto.rpc ?? pascal(e.name);
    const request = `${pkg}.${name}Request`;
    const pathParams = [...e.path.matchAll(/\{(\w+)\*?\}/g)].map((m) => m[1]);
    const fields: ProtoFieldDecl[] = [];
    const routing: RpcRoute['fields'] = {};
    for (const [field, p] of Object.entries(e.proto.request)) {
      const param = pathParams.find((n) => snakeCase(n) === field);
      const queryKey = Object.keys(e.query).find((n) => snakeCase(n) === field);
      const bodyKey = Object.keys(e.body ?? {}).find((n) => snakeCase(n) === field);
      const spec = queryKey ? e.query[queryKey] : bodyKey ? e.body![bodyKey] : undefined;
      const decl: ProtoFieldDecl = { name: field, number: p.number, type: p.scalar ?? 'string' };
      if (spec && !p.scalar) {
        const asString = spec.type === 'enum' && !p.type;
        decl.type = asString ? 'string' : this.typeOf(pkg, request, field, spec, p);
        if (spec.repeated) decl.label = 'repeated';
      }
      if (p.optional) decl.label = 'optional';
      fields.push(decl);
      const json = lowerCamel(field);
      routing[json] = param
        ? { to: 'param', name: param }
        : bodyKey
          ? { to: 'body', name: bodyKey }
          : { to: 'query', name: queryKey ?? json };
    }
    this.addMessage({ name: request, fields: fields.sort((a, b) => a.number - b.number) });
    const response = this.message(pkg, resolve(pkg, e.proto.response ?? `${name}Response`), e.response);
    this.rpc({
      service: `${pkg}.${e.proto.service}`,
      name,
      kind: 'endpoint',
      endpoint: e,
      request,
      response,
      fields: routing,
    });
  }
}

const packageOf = (name: string) =>
  name
    .split('.')
    .filter((p) => /^[a-z]/.test(p))
    .join('.');

/**
 * Each domain's aliases (spec `proto.aliases`): its messages, enums and services again under the alias package,
 * same fields and numbers, and its rpcs again under the alias's paths, run by the same operations. A type of
 * another domain is named under that domain's alias of the same version, as the reference's v2beta1 files do.
 */
function addAliases(model: ApiModel, s: ProtoSurface, problems: string[]): void {
  const declared = new Set(Object.values(model.proto.packages));
  const versions = new Map<string, Map<string, string>>();
  for (const [domain, aliases] of Object.entries(model.proto.aliases)) {
    const pkg = model.proto.packages[domain];
    for (const alias of aliases) {
      const version = alias.split('.').pop()!;
      if (declared.has(alias))
        problems.push(`domain ${domain}: /proto/aliases: ${alias} is the package of a domain already`);
      else {
        const renames = versions.get(version) ?? versions.set(version, new Map()).get(version)!;
        renames.set(pkg, alias);
      }
    }
  }
  for (const renames of versions.values()) {
    const rename = (name: string) => {
      const alias = renames.get(packageOf(name));
      return alias ? alias + name.slice(packageOf(name).length) : name;
    };
    const aliased = (name: string) => renames.has(packageOf(name));
    for (const m of [...s.messages.values()].filter((x) => aliased(x.name)))
      s.messages.set(rename(m.name), {
        ...m,
        name: rename(m.name),
        fields: m.fields.map((f) => ({ ...f, type: rename(f.type) })),
      });
    for (const e of [...s.enums.values()].filter((x) => aliased(x.name)))
      s.enums.set(rename(e.name), { ...e, name: rename(e.name) });
    for (const r of s.rpcs.filter((x) => aliased(x.service))) {
      const service = rename(r.service);
      s.rpcs.push({
        ...r,
        service,
        path: `/${service}/${r.name}`,
        request: rename(r.request),
        response: rename(r.response),
        ...(r.bodyMessage ? { bodyMessage: rename(r.bodyMessage) } : {}),
      });
    }
  }
}

/** The whole gRPC surface of the model; problems (a message declared twice, differently) are appended. */
export function protoSurface(model: ApiModel, problems: string[]): ProtoSurface {
  const b = new SurfaceBuilder(model, problems);
  b.capabilities();
  b.tokenService();
  for (const r of Object.values(model.resources)) b.resource(r);
  for (const e of model.endpoints) if (e.version !== 'v1') b.endpoint(e);
  const s = b.surface;
  addAliases(model, s, problems);
  addV1Packages(model, s, problems);
  for (const name of [...s.messages.keys(), ...s.enums.keys()]) s.packages.add(packageOf(name));
  return s;
}
