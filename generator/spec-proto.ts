// The gRPC declarations of the spec: `proto: 3` shorthands become ProtoFieldModels, and what they name is checked.
import { snakeCase } from '../runtime/model/field-names.js';
import type {
  ApiModel,
  FieldModel,
  ProtoFieldModel,
  ProtoOperationModel,
  ResourceModel,
} from '../runtime/model/api-model.js';

export type RawProtoField = number | ProtoFieldModel;

export const protoField = (p: RawProtoField): ProtoFieldModel => (typeof p === 'number' ? { number: p } : p);

/** Fields with their proto declarations normalized, through nested objects and map values. */
export function normalizeFields(fields: Record<string, FieldModel>): Record<string, FieldModel> {
  for (const f of Object.values(fields)) normalizeField(f);
  return fields;
}

function normalizeField(f: FieldModel): void {
  if (f.proto !== undefined) f.proto = protoField(f.proto as RawProtoField);
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

/** Numbers unique per message, gRPC services only on resources with operations, list requests naming parameters. */
export function checkProto(model: ApiModel, problems: string[]): void {
  for (const r of Object.values(model.resources)) {
    const at = `resource ${r.collection}`;
    if (!r.proto) continue;
    if (!model.proto.packages[r.domain]) problems.push(`${at}: /proto: the domain declares no proto package`);
    checkNumbers(r.fields, at, problems, Object.values(r.proto.numbers ?? {}));
    const list = r.operations.list?.proto?.request;
    if (r.operations.list && !list) problems.push(`${at}: /operations/list/proto/request: the list request's numbers`);
    const known = listParameters(r);
    for (const name of Object.keys(list ?? {}))
      if (!known.has(name)) problems.push(`${at}: /operations/list/proto/request/${name}: not a list parameter`);
  }
  for (const e of model.endpoints) {
    if (!e.proto) continue;
    const at = `endpoint ${e.domain}.${e.name}`;
    checkNumbers(e.response, at, problems, []);
    const params = [...e.path.matchAll(/\{(\w+)\*?\}/g)].map((m) => snakeCase(m[1]));
    const known = new Set([...params, ...Object.keys({ ...e.query, ...e.body }).map(snakeCase)]);
    for (const name of Object.keys(e.proto.request))
      if (!known.has(name)) problems.push(`${at}: /proto/request/${name}: not a path parameter, query or body field`);
  }
}

function checkNumbers(fields: Record<string, FieldModel>, at: string, problems: string[], taken: number[]): void {
  const seen = new Set(taken);
  for (const [name, f] of Object.entries(fields)) {
    if (f.proto) {
      if (seen.has(f.proto.number)) problems.push(`${at}: /fields/${name}/proto: number ${f.proto.number} is taken`);
      seen.add(f.proto.number);
    }
    if (f.fields) checkNumbers(f.fields, `${at}/${name}`, problems, []);
    if (f.mapValue?.fields) checkNumbers(f.mapValue.fields, `${at}/${name}`, problems, []);
  }
}
