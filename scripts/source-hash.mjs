// What generated/ is made from, as content hashes: the spec, the framework's spec modules it may include
// (framework/spec/), generator/, runtime/model/api-model.ts and client/ (the typed client's engine, copied into
// generated/client/). The generator
// records them beside its output (.source-hash); ensure-ready regenerates when they differ from the record.
// Plain Node: ensure-ready runs before any install.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** This checkout: where the framework's own sources are, whichever project's spec is generated. */
const framework = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));

/**
 * The hashes by source, named as ensure-ready reports them; the spec's path from the working directory (this
 * checkout's spec/, or a new API's: scripts/api.mjs).
 */
export function sourceHashes(specDir = 'spec') {
  return {
    'spec/': hashOf(specDir),
    'framework/spec/': hashOf(framework('framework/spec')),
    'generator/': hashOf(framework('generator')),
    'runtime/model/api-model.ts': hashOf(framework('runtime/model/api-model.ts')),
    'client/': hashOf(framework('client')),
  };
}
