// The gRPC declarations of the spec: `proto: 3` shorthands become ProtoFieldModels, and what they name is checked.
import { snakeCase } from '../runtime/model/field-names.js';
import type {
  ApiModel,
  EndpointModel,
  FieldModel,
  ProtoFieldModel,
  ProtoOperationModel,
  ResourceModel,
} from '../runtime/model/api-model.js';

export type RawProtoField = number | ProtoFieldModel;

export const protoField = (p: RawProtoField): ProtoFieldModel => (typeof p === 'number' ? { number: p } : p);
/** A field's declaration: `false` (not on the wire) stays as it is. */
const fieldProto = (p: RawProtoField | false): ProtoFieldModel | false => (p === false ? false : protoField(p));

/** Fields with their proto declarations normalized, through nested objects and map values. */
export function normalizeFields(fields: Record<string, FieldModel>): Record<string, FieldModel> {
  for (const f of Object.values(fields)) normalizeField(f);
  return fields;
}

function normalizeField(f: FieldModel): void {
  if (f.proto !== undefined) f.proto = fieldProto(f.proto as RawProtoField | false);
  if (f.fields) normalizeFields(f.fields);
  if (f.mapValue) normalizeField(f.mapValue);
}

export function normalizeRequest(
  request: Record<string, RawProtoField> | undefined,
): Record<string, ProtoFieldModel> | undefined {
  return request && Object.fromEntries(Object.entries(request).map(([k, v]) => [k, protoField(v)]));
}

export function normalizeOperation(p: ProtoOperationModel | undefined): ProtoOperationModel | undefined {
  if (!p) return undefined;
  const request = normalizeRequest(p.request as Record<string, RawProtoField> | undefined);
  const response = normalizeRequest(p.response as Record<string, RawProtoField> | undefined);
  return { ...p, ...(request ? { request } : {}), ...(response ? { response } : {}) };
}

/** The list parameters a list request message may carry, by proto name. */
export function listParameters(r: ResourceModel): Set<string> {
  return new Set([
    'uidp',
    'page_size',
    'page_token',
    'order_by',
    'skip',
    ...r.filters.map((f) => snakeCase(f.param)),
    ...r.unservedFilters.map(snakeCase),
    ...(r.listPath ? [parentField(r)] : []),
  ]);
}

/** A nested list's parent in its request: the {parent} of the path under the name the reference gives it. */
export function parentField(r: ResourceModel): string {
  return `${snakeCase(r.parent!).replace(/s$/, '')}_id`;
}

/** Where the spec declares a resource, an endpoint or a capability ("file: /resources/2"): problems name it. */
export interface SpecOrigins {
  resource(collection: string): string;
  endpoint(e: EndpointModel): string;
  capability(name: string): string;
  /** "file: " of a domain's file, the root of the paths in it */
  domain(name: string): string;
}

/** Numbers unique per message, list requests naming list parameters, endpoint requests naming what they take. */
export function checkProto(model: ApiModel, problems: string[], origins: SpecOrigins): void {
  for (const r of Object.values(model.resources)) {
    const at = origins.resource(r.collection);
    checkNumbers(r.fields, `${at}/fields`, problems, Object.values(r.proto?.numbers ?? {}));
    const list = r.operations.list?.proto?.request ?? {};
    const known = listParameters(r);
    for (const name of Object.keys(list))
      if (!known.has(name)) problems.push(`${at}/operations/list/proto/request/${name}: not a list parameter`);
    checkRequestNumbers(list, `${at}/operations/list/proto/request`, problems);
  }
  for (const e of model.endpoints) {
    if (!e.proto) continue;
    const at = origins.endpoint(e);
    checkNumbers(e.response, `${at}/response`, problems, []);
    const params = [...e.path.matchAll(/\{(\w+)\*?\}/g)].map((m) => snakeCase(m[1]));
    const known = new Set([...params, ...Object.keys({ ...e.query, ...e.body }).map(snakeCase)]);
    for (const name of Object.keys(e.proto.request))
      if (!known.has(name)) problems.push(`${at}/proto/request/${name}: not a path parameter, query or body field`);
    checkRequestNumbers(e.proto.request, `${at}/proto/request`, problems);
  }
}

function checkRequestNumbers(request: Record<string, ProtoFieldModel>, at: string, problems: string[]): void {
  const seen = new Map<number, string>();
  for (const [name, p] of Object.entries(request)) {
    const other = p.number === undefined ? undefined : seen.get(p.number);
    if (other) problems.push(`${at}/${name}: number ${p.number} is also ${other}'s`);
    if (p.number !== undefined) seen.set(p.number, name);
  }
}

function checkNumbers(fields: Record<string, FieldModel>, at: string, problems: string[], taken: number[]): void {
  const seen = new Set(taken);
  for (const [name, f] of Object.entries(fields)) {
    const n = f.proto ? f.proto.number : undefined;
    if (n !== undefined) {
      if (seen.has(n)) problems.push(`${at}/${name}/proto: number ${n} is taken`);
      seen.add(n);
    }
    if (f.fields) checkNumbers(f.fields, `${at}/${name}/fields`, problems, []);
    if (f.mapValue?.fields) checkNumbers(f.mapValue.fields, `${at}/${name}/mapValue/fields`, problems, []);
  }
}
