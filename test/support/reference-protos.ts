// A protobufjs Root built from the facts of the reference system's protos (test/facts/grpc-<v>.json, copied from
// the reference by scripts/reference-facts.mjs), not from ours: a client whose codec comes from it proves the wire
// works for the reference's own clients.
import { readFileSync } from 'node:fs';
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
