// A protobufjs Root built from the facts of the reference system's protos (test/facts/grpc-<v>.json, copied from
// the reference by scripts/tooling/reference-facts.mjs), not from ours: a client whose codec comes from it proves the wire
// works for the reference's own clients.
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { readStatusDetails } from '../../runtime/grpc/status.js';
import protobuf from 'protobufjs';

interface FactField {
  name: string;
  number: number;
  type: string;
  kind: string;
  label?: string;
}
export interface Facts {
  messages: Record<string, { fields?: FactField[]; wellKnown?: boolean }>;
  enums: Record<string, { values: { name: string; number: number }[] }>;
  domains: Record<
    string,
    { services: { name: string; rpcs: { name: string; request: string; response: string }[] }[] }
  >;
}

const read = (version: string): Facts => JSON.parse(readFileSync(`test/facts/grpc-${version}.json`, 'utf8'));

/** The files as one: the packages differ, and what they share (google.protobuf, capabilities, common) is the same. */
export function readFacts(versions: string[]): Facts {
  return versions.map(read).reduce((all, f) => ({
    messages: { ...all.messages, ...f.messages },
    enums: { ...all.enums, ...f.enums },
    domains: {
      ...all.domains,
      ...Object.fromEntries(Object.entries(f.domains).map(([d, v]) => [`${d}:${v.services[0]?.name}`, v])),
    },
  }));
}

/** The namespace or message a full name is declared in, made on the way. */
function parentOf(root: protobuf.Root, name: string): protobuf.Namespace | protobuf.Type {
  const parent = name.slice(0, name.lastIndexOf('.'));
  const found = root.lookup(parent);
  return found instanceof protobuf.Type || found instanceof protobuf.Namespace ? found : root.define(parent);
}

function field(f: FactField): protobuf.Field | protobuf.MapField {
  const type = f.kind === 'scalar' ? f.type : `.${f.type}`;
  const map = /^map<(\w+),/.exec(f.label ?? '');
  if (map) return new protobuf.MapField(f.name, f.number, map[1], type);
  return new protobuf.Field(f.name, f.number, type, f.label === 'repeated' ? 'repeated' : undefined);
}

export function referenceRoot(facts: Facts): protobuf.Root {
  const root = new protobuf.Root();
  for (const file of ['timestamp', 'duration', 'field_mask', 'empty', 'struct', 'any', 'wrappers'])
    root.addJSON(protobuf.common.get(`google/protobuf/${file}.proto`)!.nested!);
  const byDepth = (a: string, b: string) => a.split('.').length - b.split('.').length || a.localeCompare(b);
  const names = [
    ...Object.keys(facts.messages).filter((n) => !facts.messages[n].wellKnown),
    ...Object.keys(facts.enums),
  ];
  for (const name of names.sort(byDepth)) {
    const short = name.slice(name.lastIndexOf('.') + 1);
    if (facts.enums[name])
      parentOf(root, name).add(
        new protobuf.Enum(short, Object.fromEntries(facts.enums[name].values.map((v) => [v.name, v.number]))),
      );
    else parentOf(root, name).add(new protobuf.Type(short));
  }
  for (const [name, m] of Object.entries(facts.messages))
    if (!m.wellKnown) for (const f of m.fields ?? []) root.lookupType(name).add(field(f));
  for (const d of Object.values(facts.domains))
    for (const s of d.services) {
      const service = new protobuf.Service(s.name.slice(s.name.lastIndexOf('.') + 1));
      for (const r of s.rpcs) service.add(new protobuf.Method(r.name, 'rpc', `.${r.request}`, `.${r.response}`));
      parentOf(root, s.name).add(service);
    }
  root.resolveAll();
  return root;
}

/** An rpc's outcome: its code (0 when it answered), the answer, or the error's message and google.rpc details. */
export interface ReferenceAnswer {
  code: number;
  value?: any;
  message?: string;
  details?: any[];
}

/** One rpc (`service` below chainguard.platform) through the reference's codec, as its clients make it. */
export function callReference(
  root: protobuf.Root,
  client: grpc.Client,
  service: string,
  rpc: string,
  request: object,
  token?: string,
): Promise<ReferenceAnswer> {
  const svc = root.lookup(`chainguard.platform.${service}`) as protobuf.Service;
  const m = svc.methods[rpc];
  const req = m.resolvedRequestType!;
  const res = m.resolvedResponseType!;
  const metadata = new grpc.Metadata();
  if (token) metadata.set('authorization', `Bearer ${token}`);
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      `/${svc.fullName.slice(1)}/${rpc}`,
      (o: object) => Buffer.from(req.encode(req.fromObject(o)).finish()),
      (b: Buffer) => res.toObject(res.decode(b), { longs: String, enums: String, arrays: true }),
      request,
      metadata,
      (e, value) => {
        if (!e) return resolve({ code: 0, value });
        const bin = e.metadata.get('grpc-status-details-bin')[0] as Buffer | undefined;
        resolve({ code: e.code, message: e.details, details: bin ? readStatusDetails(bin).details : [] });
      },
    ),
  );
}
