// v1 over gRPC: each domain's `v1Proto` (the reference's v1 package, as grpc-v1.json gives it) added to the proto
// surface: its messages, enums and services, and for each rpc the v1 HTTP route it is transcoded to.
import type { ApiModel, ProtoReserved, V1ProtoModel } from '../runtime/model/api-model.js';
import type { NameTree } from '../runtime/grpc/rpc.js';
import { lowerCamelCase } from '../runtime/model/field-names.js';
import type { ProtoFieldDecl, ProtoSurface } from './proto-model.js';

const scalars = new Set([
  'string',
  'bool',
  'bytes',
  'double',
  'float',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
]);

/** A type as the block names it: a scalar, a full name (lowercase first), or a name in the package. */
const resolve = (pkg: string, name: string) => (scalars.has(name) || /^[a-z]/.test(name) ? name : `${pkg}.${name}`);

const fieldText =
  /^(\d+) (?:(repeated|optional) )?(?:map<(\w+),(\S+)>|(\S+))(?: oneof=(\w+))?(?: json=(\w+))?(?: http=(\w+))?$/;

/** A field of the block, and the name v1's HTTP body gives it where that is not its JSON name (http=). */
function fieldDecl(
  pkg: string,
  name: string,
  text: string,
  at: string,
  problems: string[],
): ProtoFieldDecl & { http?: string } {
  const m = fieldText.exec(text);
  if (!m) {
    problems.push(
      `${at}: "${text}" is not "<number> [repeated|optional] <type> [oneof=<name>] [json=<name>] [http=<name>]"`,
    );
    return { name, number: 0, type: 'string' };
  }
  const [, number, label, key, value, type, oneof, json, http] = m;
  return {
    ...(http ? { http } : {}),
    name,
    number: Number(number),
    type: resolve(pkg, value ?? type),
    ...(label ? { label: label as 'repeated' | 'optional' } : {}),
    ...(key ? { mapKey: key } : {}),
    ...(oneof ? { oneof } : {}),
    ...(json ? { jsonName: json } : {}),
  };
}

/** message -> JSON name -> the name v1's HTTP bodies give it */
type HttpNames = Record<string, Record<string, string>>;

/** The renames between a message's JSON and v1's HTTP body, through its nested messages; undefined when none. */
function namesOf(
  s: ProtoSurface,
  httpNames: HttpNames,
  message: string,
  seen = new Set<string>(),
): NameTree | undefined {
  const m = s.messages.get(message);
  if (!m || seen.has(message)) return undefined;
  const tree: NameTree = {};
  for (const f of m.fields) {
    const json = f.jsonName ?? lowerCamelCase(f.name);
    const fields = namesOf(s, httpNames, f.type, new Set([...seen, message]));
    const to = httpNames[message]?.[json];
    if (to || fields) tree[json] = { ...(to ? { to } : {}), ...(fields ? { fields } : {}) };
  }
  return Object.keys(tree).length ? tree : undefined;
}

function addPackage(domain: string, v1: V1ProtoModel, s: ProtoSurface, problems: string[], httpNames: HttpNames): void {
  const pkg = v1.package;
  const at = `domain ${domain}: /v1Proto`;
  for (const [message, fields] of Object.entries(v1.messages)) {
    const name = `${pkg}.${message}`;
    if (s.messages.has(name)) problems.push(`${at}/messages/${message}: ${name} is declared already`);
    const { reserved, ...rest } = fields as Record<string, string> & { reserved?: ProtoReserved };
    const decls = Object.entries(rest).map(([f, text]) =>
      fieldDecl(pkg, f, text, `${at}/messages/${message}/${f}`, problems),
    );
    for (const { http, ...d } of decls) if (http) (httpNames[name] ??= {})[d.jsonName ?? lowerCamelCase(d.name)] = http;
    const declared = decls.map(({ http: _, ...d }) => d).sort((a, b) => a.number - b.number);
    s.messages.set(name, { name, fields: declared, ...(reserved ? { reserved } : {}) });
  }
  for (const [e, values] of Object.entries(v1.enums ?? {}))
    s.enums.set(`${pkg}.${e}`, {
      name: `${pkg}.${e}`,
      values: Object.entries(values).map(([v, number]) => ({ name: v, number })),
    });
  for (const [service, { rpcs = {}, unimplemented = [] }] of Object.entries(v1.services)) {
    const full = `${pkg}.${service}`;
    for (const [name, rpc] of Object.entries(rpcs)) {
      const [method, template] = rpc.http.split(' ');
      s.rpcs.push({
        service: full,
        name,
        kind: 'endpoint',
        path: `/${full}/${name}`,
        request: resolve(pkg, rpc.request),
        response: resolve(pkg, rpc.response),
        fields: {},
        v1: { method, template, ...(rpc.body ? { body: rpc.body } : {}) },
      });
    }
    for (const name of unimplemented)
      if (rpcs[name]) problems.push(`${at}/services/${service}/unimplemented: ${name} is served`);
      else s.v1Unimplemented.push(`/${full}/${name}`);
  }
}

/** Every domain's v1 package; a type named but declared nowhere is a problem. */
export function addV1Packages(model: ApiModel, s: ProtoSurface, problems: string[]): void {
  const httpNames: HttpNames = {};
  for (const [domain, v1] of Object.entries(model.proto.v1)) addPackage(domain, v1, s, problems, httpNames);
  for (const r of s.rpcs.filter((x) => x.v1)) {
    const [request, response] = [namesOf(s, httpNames, r.request), namesOf(s, httpNames, r.response)];
    if (request || response) r.v1!.names = { ...(request ? { request } : {}), ...(response ? { response } : {}) };
  }
  const known = (t: string) =>
    scalars.has(t) || s.messages.has(t) || s.enums.has(t) || t.startsWith('google.protobuf.');
  for (const pkg of Object.values(model.proto.v1).map((v) => v.package)) {
    for (const m of s.messages.values())
      if (m.name.startsWith(`${pkg}.`) && /^[A-Z]/.test(m.name.slice(pkg.length + 1)))
        for (const f of m.fields)
          if (!known(f.type)) problems.push(`v1 proto message ${m.name}.${f.name}: ${f.type} is declared nowhere`);
  }
  for (const r of s.rpcs.filter((x) => x.v1))
    for (const t of [r.request, r.response]) if (!known(t)) problems.push(`v1 rpc ${r.path}: ${t} is declared nowhere`);
}
