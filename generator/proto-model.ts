// The gRPC surface the spec declares: packages of messages, enums and services, and for each rpc where its request
// fields go in the one pipeline's Call. emit-proto.ts prints it; generated/grpc.ts wires it to the runtime.
import type {
  ApiModel,
  EndpointModel,
  FieldModel,
  ProtoFieldModel,
  ProtoOperationModel,
  ProtoReserved,
  ProtoStandardNumbers,
  ResourceModel,
} from '../runtime/model/api-model.js';
import { filterField } from '../runtime/model/api-model.js';
import { ProtoNumbering, type NumberedEntry } from './proto-lock.js';
import type { RpcKind, RpcRoute, V1Http } from '../runtime/grpc/rpc.js';
import { lowerCamelCase as lowerCamel, snakeCase } from '../runtime/model/field-names.js';
import { listParameters, parentField, type SpecOrigins } from './spec-proto.js';
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
  reserved?: ProtoReserved;
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

export type { SpecOrigins };
const unplaced: SpecOrigins = {
  resource: (c) => `resource ${c}`,
  endpoint: (e) => `endpoint ${e.domain}.${e.name}`,
  capability: (c) => `capability ${c}`,
  domain: (d) => `domain ${d}: `,
};

/** On the wire: a field with a proto declaration, or without one unless the server keeps it to itself. */
const onWire = (f: FieldModel): boolean => (f.proto ? true : f.proto !== false && !(f.inputOnly && f.outputOnly));
const protoOf = (f: FieldModel): Partial<ProtoFieldModel> => f.proto || {};
type StandardField = 'uid' | 'createTime' | 'updateTime';
const standardDecl: Record<StandardField, [string, string]> = {
  uid: ['uid', 'string'],
  createTime: ['create_time', 'google.protobuf.Timestamp'],
  updateTime: ['update_time', 'google.protobuf.Timestamp'],
};
/** The standard fields of a message the spec does not number: uid first, the timestamps it shows after its fields. */
function standardEntries(numbers: ProtoStandardNumbers | undefined, shown: StandardField[]) {
  if (numbers) return { before: Object.entries(numbers) as [StandardField, number][], after: [] };
  return {
    before: [['uid', undefined]] as [StandardField, undefined][],
    after: shown.map((k): [StandardField, undefined] => [k, undefined]),
  };
}

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
    private readonly numbering: ProtoNumbering,
    private readonly origins: SpecOrigins,
  ) {}

  /**
   * What the spec leaves out, completed from the lock or the convention: each domain's package, each served
   * resource's service, each capability's number.
   */
  complete(): void {
    for (const domain of this.model.domains)
      this.model.proto.packages[domain] = this.numbering.packageOf(
        domain,
        this.model.proto.packages[domain],
        this.model,
      );
    for (const r of Object.values(this.model.resources)) {
      const served = Object.keys(r.operations).length > 0 || r.subresources.length > 0;
      if (r.proto || served)
        r.proto = { ...r.proto, service: this.numbering.serviceOf(r.collection, r.proto?.service) };
    }
  }

  /** `at`: the declaration the message is made from, named in the problem of a name two declarations give. */
  private addMessage(m: ProtoMessageDecl, at?: string): void {
    const known = this.surface.messages.get(m.name);
    if (known && JSON.stringify(known) !== JSON.stringify(m))
      this.problems.push(`${at ? `${at}: ` : ''}proto message ${m.name} is declared twice, differently`);
    this.surface.messages.set(m.name, m);
  }

  /** Enum values share the scope of their enum's parent (package or message), as protoc has it. */
  private readonly enumScope = new Map<string, string>();

  private addEnum(e: ProtoEnumDecl, at?: string): void {
    const where = at ? `${at}: ` : '';
    const known = this.surface.enums.get(e.name);
    if (known && JSON.stringify(known) !== JSON.stringify(e))
      this.problems.push(`${where}proto enum ${e.name} is declared twice, differently`);
    const scope = e.name.slice(0, e.name.lastIndexOf('.'));
    for (const v of e.values) {
      const other = this.enumScope.get(`${scope}.${v.name}`);
      if (other && other !== e.name)
        this.problems.push(
          `${where}the value ${v.name} of ${e.name} is also one of ${other}, in the same scope ${scope}: rename one, or give the enum a proto type of its own`,
        );
      this.enumScope.set(`${scope}.${v.name}`, e.name);
    }
    this.surface.enums.set(e.name, e);
  }

  /** An enum of the spec's values, numbered from the lock; `at` is where the values are declared. */
  private enumOf(name: string, values: string[], at: string): string {
    if (name === this.model.proto.capabilities?.enum) return name;
    // proto3 cannot tell value 0 from a field left unset: it must mean unset.
    if (!/(^|_)(UNSPECIFIED|UNKNOWN)$/.test(values[0] ?? ''))
      this.problems.push(
        `${at}: the first value of ${name} (0, what an unset field reads as) must be <NAME>_UNSPECIFIED, not ${values[0]}`,
      );
    this.numberedEnum(
      name,
      values.map((v) => ({ name: v })),
      at,
    );
    return name;
  }

  private numberedEnum(name: string, entries: NumberedEntry[], at: string): Map<string, number> {
    const numbers = this.numbering.enumValues(name, entries, () => at);
    const values = entries.map((v) => ({ name: v.name, number: numbers.get(v.name)! }));
    const reserved = this.numbering.reserved(name, 'enum');
    this.addEnum({ name, values, ...(reserved ? { reserved } : {}) }, at);
    return numbers;
  }

  /**
   * The wire type of a spec field (declared at `at`); object and enum fields declare their messages and enums on
   * the way. A field the spec gives no type keeps its enum inside its message, so two resources' `status` differ.
   */
  private typeOf(
    pkg: string,
    owner: string,
    key: string,
    f: FieldModel,
    p: Partial<ProtoFieldModel>,
    at: string,
    numbered = true,
  ) {
    if (p.scalar) return p.scalar;
    if (f.resource) {
      const r = this.model.resources[f.resource];
      return resolve(this.model.proto.packages[r.domain], r.proto?.message ?? r.type);
    }
    const nested = `${owner.slice(pkg.length + 1)}.${pascal(key)}`;
    if (f.type === 'object') {
      const name = resolve(pkg, p.type ?? nested);
      this.message(pkg, name, f.fields ?? {}, (k) => `${at}/fields/${k}`);
      return name;
    }
    // A string that travels as a well-known message (an endpoint's update_mask as google.protobuf.FieldMask).
    if (f.type === 'string' && p.type) return resolve(pkg, p.type);
    if (f.type === 'enum')
      return this.enumOf(resolve(pkg, p.type ?? (numbered ? pascal(key) : nested)), f.values ?? [], `${at}/values`);
    return scalars[f.type]!;
  }

  private fieldDecl(
    pkg: string,
    owner: string,
    key: string,
    f: FieldModel,
    p: Partial<ProtoFieldModel> & { number: number },
    at: string,
  ): ProtoFieldDecl {
    const name = p.name ?? snakeCase(key);
    const decl: ProtoFieldDecl = { name, number: p.number, type: '' };
    if (f.type === 'map') {
      decl.mapKey = p.key ?? 'string';
      decl.type = this.typeOf(pkg, owner, key, f.mapValue!, p, `${at}/mapValue`, !!f.proto);
    } else {
      decl.type = this.typeOf(pkg, owner, key, f, p, at, !!f.proto);
      if (f.repeated) decl.label = 'repeated';
    }
    if (p.optional) decl.label = 'optional';
    if (p.oneof) decl.oneof = p.oneof;
    if (lowerCamel(name) !== key) decl.jsonName = key;
    return decl;
  }

  /**
   * A message of spec fields on the wire, and the standard fields it carries (`standard`: those the spec numbers,
   * else uid and the timestamps shown), numbered from the lock. `at(key)` is where field `key` is declared.
   */
  message(
    pkg: string,
    name: string,
    fields: Record<string, FieldModel>,
    at: (key: string) => string,
    standard: { numbers?: ProtoStandardNumbers; shown: StandardField[] } = { numbers: {}, shown: [] },
    declaredReserved?: ProtoReserved,
  ): ProtoFieldDecl[] {
    const { before, after } = standardEntries(standard.numbers, standard.shown);
    const wire = Object.entries(fields).filter(([, f]) => onWire(f));
    const keyOf = new Map<string, string>();
    const entries: NumberedEntry[] = [
      ...before.map(([k, pinned]) => ({ name: standardDecl[k][0], pinned })),
      ...wire.map(([key, f]) => {
        const p = protoOf(f);
        keyOf.set(p.name ?? snakeCase(key), key);
        return { name: p.name ?? snakeCase(key), pinned: p.number };
      }),
      ...after.map(([k]) => ({ name: standardDecl[k][0] })),
    ];
    const numbers = this.numbering.message(name, entries, (entry) =>
      keyOf.has(entry)
        ? `${at(keyOf.get(entry)!)}/proto`
        : `${at('').replace(/\/(fields|response)\/$/, '')}/proto/numbers`,
    );
    const decls: ProtoFieldDecl[] = [...before, ...after].map(([k]) => {
      const [field, type] = standardDecl[k];
      return { name: field, number: numbers.get(field)!, type };
    });
    for (const [key, f] of wire) {
      const p = protoOf(f);
      decls.push(this.fieldDecl(pkg, name, key, f, { ...p, number: numbers.get(p.name ?? snakeCase(key))! }, at(key)));
    }
    decls.sort((a, b) => a.number - b.number);
    const reserved = this.numbering.reserved(name, 'message', declaredReserved);
    this.addMessage({ name, fields: decls, ...(reserved ? { reserved } : {}) }, at('').replace(/\/$/, ''));
    return decls;
  }

  private rpc(decl: Omit<RpcDecl, 'path'>): void {
    this.surface.rpcs.push({ ...decl, path: `/${decl.service}/${decl.name}` });
  }

  /** The capability vocabulary as an enum: each capability's number the spec's, else the lock's, else a new one. */
  capabilities(): void {
    const c = this.model.proto.capabilities;
    if (!c) return;
    const caps = Object.entries(this.model.capabilities);
    const entries = [{ name: c.unspecified, pinned: 0 }, ...caps.map(([name, m]) => ({ name, pinned: m.proto }))];
    const numbers = this.numbering.enumValues(c.enum, entries, (name) => `${this.origins.capability(name)}/proto`);
    for (const [name, m] of caps) m.proto = numbers.get(name)!;
    const values = entries.map((v) => ({ name: v.name, number: numbers.get(v.name)! }));
    const reserved = this.numbering.reserved(c.enum, 'enum');
    this.addEnum({ name: c.enum, values, ...(reserved ? { reserved } : {}) });
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
    const name = this.model.proto.hierarchyFilter ?? `${this.model.service}.common.UIDPFilter`;
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
    const at = this.origins.resource(r.collection);
    const message = resolve(pkg, r.proto.message ?? r.type);
    const shown = r.timestamps ?? ['createTime', 'updateTime'];
    const fields = this.message(
      pkg,
      message,
      { ...r.fields, ...r.presents },
      (k) => `${at}/${r.presents && k in r.presents ? 'presents' : 'fields'}/${k}`,
      { numbers: r.proto.numbers, shown },
      r.proto.reserved,
    );
    // An empty message reads every request as empty: a create would answer "name is required", whatever was sent.
    if (fields.length === 0) this.problems.push(`${at}/proto: ${message} would have no fields on the gRPC wire`);
    const singular = snakeCase(message.split('.').pop()!).replace(/^_/, '');
    for (const kind of ['list', 'get', 'create', 'update', 'delete'] as const) {
      const op = r.operations[kind];
      if (!op) continue;
      const name = op.proto?.rpc ?? (kind === 'list' ? `List${pascal(r.collection)}` : `${pascal(kind)}${r.type}`);
      const request = `${pkg}.${name}Request`;
      const std = { service, name, kind, resource: r, request };
      if (kind === 'list') {
        const params = this.listRequest(r, request, op.proto, `${at}/operations/list/proto/request`);
        const response = this.listResponse(r, pkg, name, message, op.proto?.response);
        this.rpc({ ...std, response, fields: this.listRouting(r, params) });
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
    const at = this.origins.resource(r.collection);
    const shared = r.batchCreate!.shared.map((field, i) =>
      this.fieldDecl(pkg, message, field, r.fields[field], { number: 3 + i }, `${at}/fields/${field}`),
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
    const message = resolve(pkg, s.proto?.message ?? s.type);
    const at = `${this.origins.resource(r.collection)}/subresources/${r.subresources.indexOf(s)}/fields`;
    this.message(pkg, message, s.fields, (k) => `${at}/${k}`, { numbers: s.proto?.numbers, shown: [] });
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
  private listFieldType(
    r: ResourceModel,
    field: string,
    p: Partial<ProtoFieldModel>,
    at: string,
  ): Pick<ProtoFieldDecl, 'type' | 'label'> {
    const pkg = this.model.proto.packages[r.domain];
    if (field === 'uidp') return { type: this.hierarchyFilter() };
    if (field === 'page_size' || field === 'skip') return { type: 'int32' };
    if (p.scalar) return { type: p.scalar };
    const filter = r.filters.find((f) => snakeCase(f.param) === field);
    if (!filter) {
      if (!p.type) return { type: 'string' };
      return { type: p.values ? this.enumOf(resolve(pkg, p.type), p.values, at) : resolve(pkg, p.type) };
    }
    const f = filterField(r, filter);
    const message = resolve(pkg, r.proto?.message ?? r.type);
    const own = filter.field ? r.fields[filter.field] : undefined;
    // A filter on an enum field the spec gives no type takes the field's own enum (Product.Colour).
    const declared = own?.proto
      ? own.proto.type
      : own?.type === 'enum'
        ? `${message}.${pascal(filter.field!)}`
        : undefined;
    const type =
      f.type === 'enum'
        ? this.enumOf(resolve(pkg, p.type ?? declared ?? pascal(filter.param)), f.values ?? [], at)
        : this.typeOf(pkg, message, filter.param, f, { number: p.number }, at);
    return filter.match === 'anyOf' ? { type, label: 'repeated' } : { type };
  }

  /** A list request: the parameters the spec numbers, else every list parameter, numbered from the lock. */
  private listRequest(r: ResourceModel, name: string, op: ProtoOperationModel | undefined, at: string): string[] {
    const declared = op?.request;
    const params = declared ? Object.keys(declared) : [...listParameters(r)];
    const numbers = this.numbering.message(
      name,
      params.map((field) => ({ name: field, pinned: declared?.[field].number })),
      (field) => `${at}/${field}`,
    );
    const fields = params.map((field) => {
      const p = declared?.[field] ?? {};
      const decl: ProtoFieldDecl = {
        name: field,
        number: numbers.get(field)!,
        ...this.listFieldType(r, field, p, `${at}/${field}`),
      };
      if (p.repeated) decl.label = 'repeated';
      if (p.optional) decl.label = 'optional';
      return decl;
    });
    fields.sort((a, b) => a.number - b.number);
    const reserved = this.numbering.reserved(name, 'message', op?.reserved);
    this.addMessage({ name, fields, ...(reserved ? { reserved } : {}) });
    return params;
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
    const at = `${this.origins.resource(r.collection)}/operations/list/proto/response`;
    const fields = Object.entries(numbers).map(([name, p]): ProtoFieldDecl => {
      if (p.number === undefined) this.problems.push(`${at}/${name}: a declared list response numbers its fields`);
      const decl: ProtoFieldDecl = { name, number: p.number ?? 0, type: name === items ? message : types[name] };
      if (name === items) decl.label = 'repeated';
      if (p.optional) decl.label = 'optional';
      return decl;
    });
    if (!fields.some((f) => f.name === items)) this.problems.push(`${at}: the list response has no ${items}`);
    const name = `${pkg}.${rpc}Response`;
    this.addMessage({ name, fields });
    return name;
  }

  /** Where a list request's fields go: the query parameters of the HTTP list, or the parent of a nested list. */
  private listRouting(r: ResourceModel, fields: string[]): RpcRoute['fields'] {
    const out: RpcRoute['fields'] = {};
    const params = [...r.filters.map((f) => f.param), ...r.unservedFilters];
    for (const name of fields) {
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
    const at = this.origins.endpoint(e);
    const numbers = this.numbering.message(
      request,
      Object.entries(e.proto.request).map(([field, p]) => ({ name: field, pinned: p.number })),
      (field) => `${at}/proto/request/${field}`,
    );
    for (const [field, p] of Object.entries(e.proto.request)) {
      const param = pathParams.find((n) => snakeCase(n) === field);
      const queryKey = Object.keys(e.query).find((n) => snakeCase(n) === field);
      const bodyKey = Object.keys(e.body ?? {}).find((n) => snakeCase(n) === field);
      const spec = queryKey ? e.query[queryKey] : bodyKey ? e.body![bodyKey] : undefined;
      const decl: ProtoFieldDecl = { name: field, number: numbers.get(field)!, type: p.scalar ?? 'string' };
      if (spec && !p.scalar) {
        const asString = spec.type === 'enum' && !p.type;
        const where = `${at}/${queryKey ? `query/${queryKey}` : `body/${bodyKey}`}`;
        decl.type = asString ? 'string' : this.typeOf(pkg, request, field, spec, p, where);
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
    const reserved = this.numbering.reserved(request, 'message');
    this.addMessage({
      name: request,
      fields: fields.sort((a, b) => a.number - b.number),
      ...(reserved ? { reserved } : {}),
    });
    const response = resolve(pkg, e.proto.response ?? `${name}Response`);
    this.message(pkg, response, e.response, (k) => `${at}/response/${k}`);
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
function addAliases(model: ApiModel, s: ProtoSurface, problems: string[], origins: SpecOrigins): void {
  const declared = new Set(Object.values(model.proto.packages));
  const versions = new Map<string, Map<string, string>>();
  for (const [domain, aliases] of Object.entries(model.proto.aliases)) {
    const pkg = model.proto.packages[domain];
    for (const alias of aliases) {
      const version = alias.split('.').pop()!;
      if (declared.has(alias))
        problems.push(`${origins.domain(domain)}/proto/aliases: ${alias} is the package of a domain already`);
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

/**
 * The whole gRPC surface of the model, what the spec leaves out numbered from the lock (`numbering.next` is the
 * lock to write); problems (a message declared twice, differently; a number a removed field had) are appended.
 */
export function protoSurface(
  model: ApiModel,
  problems: string[],
  numbering = new ProtoNumbering(undefined, problems),
  origins: SpecOrigins = unplaced,
): ProtoSurface {
  const b = new SurfaceBuilder(model, problems, numbering, origins);
  b.complete();
  b.capabilities();
  b.tokenService();
  for (const r of Object.values(model.resources)) b.resource(r);
  for (const e of model.endpoints) if (e.version !== 'v1') b.endpoint(e);
  const s = b.surface;
  addAliases(model, s, problems, origins);
  addV1Packages(model, s, problems);
  for (const name of [...s.messages.keys(), ...s.enums.keys()]) s.packages.add(packageOf(name));
  return s;
}
