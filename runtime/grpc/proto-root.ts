// The generated .proto files (generated/proto/) as one protobufjs Root, field names as the .proto spells them.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import protobuf from 'protobufjs';
import { defaultGeneratedDir } from '../operate/open-resources.js';

/** Every .proto below dir, relative to it, sorted. */
export function protoFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.proto')) out.push(relative(dir, join(d, e.name)));
    }
  };
  walk(dir);
  return out.sort();
}

export function loadProtoRoot(generatedDir = defaultGeneratedDir): protobuf.Root {
  return loadProtoDir(join(generatedDir, 'proto'));
}

/** The .proto files below dir (generated/proto or a copy of it) as one Root. */
export function loadProtoDir(dir: string): protobuf.Root {
  const root = new protobuf.Root();
  // Imports name files relative to generated/proto; google/protobuf/* are protobufjs's bundled copies.
  root.resolvePath = (_origin, target) => (target.startsWith('google/protobuf/') ? target : join(dir, target));
  root.loadSync(protoFiles(dir), { keepCase: true });
  root.resolveAll();
  return root;
}
