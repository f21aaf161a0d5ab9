// The API model: what the generator derives from spec/ and the runtime interprets.
// generated/model.ts holds one value of type ApiModel; nothing else describes resources.

export type FieldType =
  'string' | 'bool' | 'int32' | 'int64' | 'double' | 'timestamp' | 'duration' | 'enum' | 'object' | 'map';

/** How stored rows take a change of a field: each value converted, one value for all, or left unset to refill. */
export type ExistingRows = 'convert' | 'clear' | { default: unknown };

/** A change of how a field is stored (generator/schema-lock.ts records it), applied to rows stored before `since`. */
export interface StoredChange {
  /** the schemaVersion that made it */
  since: number;
  /**
   * type: a new column for a new type; rename: a new column for a new name; required: old rows may lack it;
   * values: an enum's removed values, each given the declared value in place (`renamed`)
   */
  kind: 'type' | 'rename' | 'required' | 'values';
  /** type and rename: the columns it was stored in before, newest first (the first a database has is read) */
  from?: string[];
  /** copy: the same values under a new name */
  rows: ExistingRows | 'copy';
  /** values: old value -> the value rows holding it take */
  renamed?: Record<string, string>;
  /** values of an enum inside the field's JSON: its dotted path from the field ("oidc.correlationRule"; map values *) */
  path?: string;
}

export interface FieldModel {
  type: FieldType;
  repeated?: boolean;
  required?: boolean;
  outputOnly?: boolean;
  inputOnly?: boolean;
  /** a credential given on input: stored sealed with the secrets key (runtime/storage/secret-seal.ts) */
  secret?: boolean;
  immutable?: boolean;
  /** shown by the create response alone */
  createOnly?: boolean;
  /** an output-only timestamp set to the record's create time */
  setOnCreate?: boolean;
  /** an output-only string set to the uid of the identity that creates the record */
  setToCreator?: boolean;
  pattern?: string;
  /** the value is a regular expression the server runs: it must be one that cannot backtrack without bound */
  regex?: boolean;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  values?: string[];
  default?: unknown;
  example?: unknown;
  /** the field's earlier name (spec): its stored values are copied over, the old column kept */
  renamedFrom?: string;
  /** an enum's removed values and the declared value each stored one takes (spec): migrated in place */
  renamedValues?: Record<string, string>;
  /** how rows stored before a change of type or required-ness take it (spec): runtime/storage/stored-rows.ts */
  existingRows?: ExistingRows;
  /** its column when not its snake_case name: a new one for each type it was stored as (spec/schema.lock.json) */
  column?: string;
  /** the changes of how it is stored, oldest first, that rows stored before `since` go through at migration */
  changes?: StoredChange[];
  fields?: Record<string, FieldModel>;
  mapValue?: FieldModel;
  /** collection of the record this field's value is the uid of */
  references?: string;
  /** the field names a role this record grants: the caller must hold all its capabilities where it applies */
  grantsRole?: boolean;
  /** the uid of the group where the role this record grants applies: its own group or one below (default: its group) */
  grantScope?: boolean;
  /** the field lists capabilities that every record granting this one (a role) grants: adding one needs the caller to hold it */
  grantsCapabilities?: boolean;
  /** who may act as this identity (claimMatch, keys): changing it needs a caller who holds what the identity holds */
  assumable?: boolean;
  /** the referenced record must live in this record's group or above it (an identity or role bound here) */
  inScope?: boolean;
  /** a capability the caller must hold where the record is to set this field to anything but its zero value */
  requires?: string;
  /** with requires: while this field is set, changing these fields needs that capability too (a verified name) */
  protects?: string[];
  /** an object field holding a record of this collection, shown as its get answers it (fields filled in by the loader) */
  resource?: string;
  description?: string;
  /**
   * how the field travels in gRPC messages; without one it travels as the convention has it, numbered by the
   * generator (spec/proto.lock.json); false: not on the gRPC wire (a field the reference's message does not have)
   */
  proto?: ProtoFieldModel | false;
}

/** A field of a gRPC message: its number, and its name or type where the convention does not give them. */
export interface ProtoFieldModel {
  /** default: assigned by the generator and recorded in spec/proto.lock.json */
  number?: number;
  /** default: the snake_case of the spec name */
  name?: string;
  /** message or enum: relative to the domain's package (Identity.ClaimMatch) or a full name */
  type?: string;
  oneof?: string;
  /** proto3 explicit presence */
  optional?: boolean;
  /** the wire scalar where it is not the field type's */
  scalar?: 'string' | 'bool' | 'int32' | 'int64' | 'double' | 'bytes';
  /** a repeated request field (a list request's unserved filter) */
  repeated?: boolean;
  /** a map's key type on the wire */
  key?: 'string' | 'int64' | 'int32';
  /** an enum only the wire has (an unserved filter's): its values, numbered from 0 */
  values?: string[];
}

export interface ProtoReserved {
  numbers?: number[];
  names?: string[];
  /** inclusive ranges: reserved 3 to 6 */
  ranges?: [number, number][];
}

/** Numbers of the standard fields (uid, createTime, updateTime) a message carries. */
export type ProtoStandardNumbers = Partial<Record<'uid' | 'createTime' | 'updateTime', number>>;

/** An operation's rpc where it departs from the standard one (List<Collection>, Get<Type>, ...). */
export interface ProtoOperationModel {
  rpc?: string;
  /** request fields by proto name; a list's: uidp, its filters, page_size, page_token, order_by, skip */
  request?: Record<string, ProtoFieldModel>;
  reserved?: ProtoReserved;
  /** a list's response fields when they are not <items> 1, next_page_token 2, total_count 3, skipped 4 */
  response?: Record<string, ProtoFieldModel>;
}

/** set: the value names which of several fields is set (e.g. how an identity matches tokens). */
export type FilterMatch = 'exact' | 'anyOf' | 'contains' | 'atLeast' | 'atMost' | 'set';

export interface FilterModel {
  param: string;
  /** the field compared: a declared or standard field, or `parent` (the parent's uid); none for `set` */
  field?: string;
  match: FilterMatch;
  /** set: each value of the parameter -> the field that must be set, or null for no condition */
  fields?: Record<string, string | null>;
}

/** Capabilities needed (all of them), 'authenticated' (any verified caller) or 'none' (anyone). */
export type Capability = string[] | 'authenticated' | 'none';

export interface OperationModel {
  capability: Capability;
  event?: string;
  proto?: ProtoOperationModel;
}

export type StandardOperation = 'list' | 'get' | 'create' | 'update' | 'delete';

export interface SubresourceModel {
  name: string;
  type: string;
  fields: Record<string, FieldModel>;
  get: OperationModel;
  update?: OperationModel;
  proto?: { message?: string; numbers?: ProtoStandardNumbers };
}

export interface ResourceModel {
  /** the timestamps it shows; undefined: both */
  timestamps?: ('createTime' | 'updateTime')[];
  domain: string;
  type: string;
  collection: string;
  /** URL segment(s) below /<domain>/v2/. */
  path: string;
  /** List path with {parent} when the list is nested under its parent. */
  listPath?: string;
  parent?: string;
  parentOptional: boolean;
  uid: 'generated' | 'parent';
  onParentDelete: 'restrict' | 'cascade';
  readOnly: boolean;
  /** the fields that identify a record (`parent`: its parent's uid); the import is an upsert on them */
  naturalKey?: string[];
  publicRootRecords: boolean;
  /** a create naming an existing value of this field under the same parent replaces that record */
  upsertOn?: string;
  /**
   * POST .../<collection>:batchCreate: several creates under one parent, all or none (runtime/pipeline/operations.ts).
   * `shared` fields may be given once for every request; a request giving another value is refused.
   */
  batchCreate?: { max: number; shared: string[] };
  /** POST .../<collection>:batchDelete: records of one parent by uid, in one transaction; a gone one is skipped. */
  batchDelete?: { max: number };
  /** groups of fields of which at most one may be set */
  exclusive: string[][];
  /** hand-written handler of the domain that completes a record before it is stored */
  onCreate?: string;
  /** the only fields its events carry: the rest is redacted (an invite's key id) */
  eventFields?: string[];
  /** indexes beyond those of its orders and natural key, for the runtime's own queries (event deliveries) */
  indexes?: string[][];
  /** hand-written handler of the domain that shapes records for responses */
  presenter?: string;
  /** what the presenter adds to every response (output only, not stored) */
  presents?: Record<string, FieldModel>;
  /** built-in role the creator of a root record is bound to in it */
  creatorRole?: string;
  /** Declared fields, without uid/createTime/updateTime. */
  fields: Record<string, FieldModel>;
  /** columns the spec no longer reads (a removed, renamed or retyped field's): kept with their values, never reused */
  retired?: Record<string, { field: string; type: string }>;
  filters: FilterModel[];
  /** list parameters of the reference contract this server does not serve: refused by name */
  unservedFilters: string[];
  /** order_by name -> field; always includes uid. */
  orderBy: Record<string, string>;
  defaultOrder: { key: string; desc: boolean };
  operations: Partial<Record<StandardOperation, OperationModel>>;
  subresources: SubresourceModel[];
  /** Resources whose parent is this one (derived). */
  children: string[];
  v1?: V1Model;
  /** the gRPC service and message; a resource without one is not served over gRPC */
  proto?: { service: string; message?: string; numbers?: ProtoStandardNumbers; reserved?: ProtoReserved };
}

/** How a resource looks in v1 where v1 differs from v2. */
export interface V1Model {
  collection: string;
  /** v2 field -> v1 name; a dotted path renames a field of a nested object. */
  fields: Record<string, string>;
  /** Enum values v1 spells differently: v2 field path -> v2 value -> v1 value. */
  values: Record<string, Record<string, string>>;
  /** v1 list parameter -> v2 list parameter. */
  params: Record<string, string>;
  /** The list answers one page with nextPageToken and totalCount instead of every match. */
  paged: boolean;
  /** Create takes {<parent>: uid, <resource>: {...}} instead of the parent in the path. */
  createRequest?: { parent: string; resource: string };
  /** v1 field -> the subresource field that holds it (v1's repo readme is v2's readme subresource). */
  subresourceFields: Record<string, { subresource: string; field: string }>;
  /** Writes that only v1 has. */
  operations: Partial<Record<'create' | 'update' | 'delete', OperationModel>>;
}

/** The operation as either version serves it: v2's, or the write only v1 has. */
/** The name of one item in a batch create's requests, as the reference names it: RoleBinding -> roleBinding. */
export const batchItemName = (r: ResourceModel) => `${r.type[0].toLowerCase()}${r.type.slice(1)}`;

export function operationOf(r: ResourceModel, name: StandardOperation): OperationModel | undefined {
  return r.operations[name] ?? (name === 'list' || name === 'get' ? undefined : r.v1?.operations[name]);
}

export interface EndpointModel {
  domain: string;
  name: string;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  /** a call only v1 has: served under /<prefix or domain>/v1/, left out of v2's documents */
  version?: 'v1';
  /** the first path segment when it is not the domain (v1's /auth/v1/register) */
  prefix?: string;
  capability: Capability;
  scope?: string;
  /** the collection the call lists: without the capability the caller sees none of it, instead of being refused */
  lists?: string;
  /** the call takes the listed collection's list query (validated as the list's) */
  listQuery?: boolean;
  query: Record<string, FieldModel>;
  body?: Record<string, FieldModel>;
  response: Record<string, FieldModel>;
  event?: string;
  /** not served: what it needs that this server does not run; answered UNIMPLEMENTED, with no handler */
  unimplemented?: string;
  /** the rpc: request fields by proto name (path parameters, query and body fields); response message name */
  proto?: { service: string; rpc?: string; request: Record<string, ProtoFieldModel>; response?: string };
}

export interface CapabilityModel {
  v1: string;
  deprecated?: boolean;
  internal?: boolean;
  /** not in the published contract's Capability enum: an addition of ours */
  extension?: boolean;
  /** its number in the gRPC Capability enum */
  proto?: number;
}

export interface BuiltInRole {
  uid: string;
  name: string;
  description: string;
  capabilities: string[];
  /** The identity made on first start is bound to it in the first organization. */
  bootstrap: boolean;
}

export interface ApiModel {
  title: string;
  version: string;
  service: string;
  /** the version of the stored schema (spec/api.yaml schemaVersion): runtime/storage/schema-versions.ts */
  schemaVersion: number;
  domains: string[];
  /** who answers for the API and under what terms, as api.yaml declares them (the OpenAPI info object) */
  info: ApiInfo;
  /** domain -> the title its spec file gives it */
  domainTitles: Record<string, string>;
  resources: Record<string, ResourceModel>;
  endpoints: EndpointModel[];
  /** v2 enum name -> v1 form */
  capabilities: Record<string, CapabilityModel>;
  roles: BuiltInRole[];
  proto: ProtoApiModel;
  /**
   * false when api.yaml does not include the framework's token service (`include: [sts]`): /sts/* and its gRPC
   * service are then not served, and tokens come from `npm run token` alone. Absent: served.
   */
  tokenExchange?: false;
}

export interface ApiInfo {
  /** the release of this API's server, semver (api.yaml `release`, CHANGELOG.md's latest): the contract's info.version */
  release: string;
  /** what the API is, how a caller authenticates, where its documentation is (the contract's info.description) */
  description?: string;
  contact?: { name?: string; url?: string; email?: string };
  license?: { name: string; identifier?: string; url?: string };
}

/** What gRPC needs of the API as a whole. */
export interface ProtoApiModel {
  /** domain -> package of its services and messages */
  packages: Record<string, string>;
  /** domain -> further packages its services are also served under, same messages (v2beta1: the pre-release name) */
  aliases: Record<string, string[]>;
  /** the message of every list request's uidp */
  hierarchyFilter?: string;
  /** the capability vocabulary as an enum: its full name and the name of value 0 */
  capabilities?: { enum: string; unspecified: string };
  /** the package of the token service (SecurityTokenService: Exchange), as the reference's clients call it */
  tokenService?: string;
  /** domain -> its v1 package over gRPC (spec `v1Proto`) */
  v1: Record<string, V1ProtoModel>;
}

/**
 * v1 over gRPC (spec `v1Proto`): the reference's v1 package of a domain, written out as its protos have it, since
 * v1's messages are not v2's renamed. Each rpc is transcoded to the v1 HTTP route its http rule names.
 */
export interface V1ProtoModel {
  package: string;
  services: Record<string, { rpcs?: Record<string, V1RpcModel>; unimplemented?: string[] }>;
  /** message -> field -> "<number> [repeated|optional] <type> [oneof=<name>] [json=<json name>]"; and reserved */
  messages: Record<string, Record<string, string | ProtoReserved>>;
  /** enum -> value -> number */
  enums?: Record<string, Record<string, number>>;
}
export interface V1RpcModel {
  request: string;
  response: string;
  /** the google.api.http rule: "<METHOD> <path template>" */
  http: string;
  /** "*" (the whole request) or the request field that is the body; none: every field not in the path is a query */
  body?: string;
}

/** What a filter's parameter holds: the field it compares, the parent's uid, or the values of a `set` filter. */
export function filterField(r: ResourceModel, f: FilterModel): FieldModel {
  if (f.match === 'set') return { type: 'enum', values: Object.keys(f.fields ?? {}) };
  if (f.field === 'parent') return { type: 'string', description: "the parent's uid" };
  return { ...(r.fields[f.field!] ?? standardFields[f.field!]), repeated: false, outputOnly: false };
}

/** Fields every resource has, maintained by the server. */
export const standardFields: Record<string, FieldModel> = {
  uid: { type: 'string', outputOnly: true },
  createTime: { type: 'timestamp', outputOnly: true },
  updateTime: { type: 'timestamp', outputOnly: true },
};
