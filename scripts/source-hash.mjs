// What generated/ is made from, as content hashes: the spec, the framework's spec modules it may include
// (framework/spec/), generator/, runtime/model/api-model.ts and client/ (the typed client's engine, copied into
// generated/client/). The generator
// records them beside its output (.source-hash); ensure-ready regenerates when they differ from the record.
// Plain Node: ensure-ready runs before any install.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const sourceRecordFile = '.source-hash';

const hash = (data) => createHash('sha256').update(data).digest('hex');

/** A file's hash, or a directory's: its files' paths and contents in a fixed order, so renames count. */
function hashOf(path) {
  if (!existsSync(path)) return 'missing';
  if (!statSync(path).isDirectory()) return hash(readFileSync(path));
  const files = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else files.push(join(dir, e.name));
    }
  };
  walk(path);
  return hash(
    files
      .map((f) => `${relative(path, f)}\0${hash(readFileSync(f))}\n`)
      .sort()
      .join(''),
  );
}

/**
 * The hashes by source, named as ensure-ready reports them. The spec's path is from the working directory (this
 * checkout's spec/, or a new API's: scripts/api.mjs); the framework's sources are under root, the framework's
 * checkout (npm runs this checkout's scripts in it: '.').
 */
export function sourceHashes(specDir = 'spec', root = '.') {
  return {
    'spec/': hashOf(specDir),
    'framework/spec/': hashOf(join(root, 'framework/spec')),
    'generator/': hashOf(join(root, 'generator')),
    'runtime/model/api-model.ts': hashOf(join(root, 'runtime/model/api-model.ts')),
    'client/': hashOf(join(root, 'client')),
  };
}
