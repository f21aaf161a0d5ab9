// The start-up build of the server: server/main.ts and everything of ours it imports (runtime/, handlers/,
// generated/*.ts) bundled by esbuild into plain JavaScript in .build/server/, so that npm start runs it on Node
// without a TypeScript loader (tsx cost about 0.5 s of every start). Dependencies stay in node_modules.
// A build is used only while every file it was made from (esbuild's list), tsconfig.json, this file and
// esbuild's version are what they were, by content: any change rebuilds before the server starts, so a stale
// build never runs. Plain Node: it runs before anything is compiled.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const entry = 'server/main.ts';
/** What the bundle depends on besides the files esbuild reads. */
const alsoFrom = ['tsconfig.json', 'scripts/server-build.mjs', 'node_modules/esbuild/package.json'];

const hash = (data) => createHash('sha256').update(data).digest('hex');
const hashOf = (root, file) => {
  const path = join(root, file);
  return existsSync(path) ? hash(readFileSync(path)) : 'missing';
};

const buildDir = (root) => join(root, '.build', 'server');
const recordFile = (root) => join(buildDir(root), 'current.json');

/** Why the recorded build cannot run, or undefined when it can. */
function staleness(root, record) {
  if (record === undefined) return 'there is no build yet';
  const changed = Object.keys(record.from).filter((file) => hashOf(root, file) !== record.from[file]);
  if (changed.length === 0) return existsSync(join(buildDir(root), record.main)) ? undefined : 'the build is missing';
  const named = changed.slice(0, 3).join(', ') + (changed.length > 3 ? ` and ${changed.length - 3} more` : '');
  return `${named} changed since the last build`;
}

/**
 * Code that resolves a path against its own file's URL (the read worker, generated/) keeps resolving it there
 * rather than against the bundle's: import.meta.url becomes the source file's URL, relative to the bundle, which
 * stands at urlBase (the start-up build: where it is written; the release: server/, in a copy of the tree).
 */
function sourceUrls(urlBase) {
  return {
    name: 'source-urls',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const url = JSON.stringify(relative(urlBase, args.path));
        return { contents: text.replaceAll('import.meta.url', `new URL(${url}, import.meta.url).href`), loader: 'ts' };
      });
    },
  };
}

/**
 * MikroORM's packages are CommonJS that re-export hundreds of files. Imported as ES modules, Node first reads
 * and scans every one of those files for its export names (cjs-module-lexer), 0.15 s of each start; require()
 * does not. The bundle loads them with require(), which gives the same objects (the require cache is shared).
 */
const requiredPackages = ['@mikro-orm/core', '@mikro-orm/better-sqlite', '@mikro-orm/postgresql'];

function requirePackages() {
  return {
    name: 'require-packages',
    setup(build) {
      const filter = new RegExp(`^(${requiredPackages.join('|')})$`);
      build.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'required-package' }));
      build.onLoad({ filter: /.*/, namespace: 'required-package' }, (args) => ({
        contents: `module.exports = __requirePackage(${JSON.stringify(args.path)});`,
        loader: 'js',
      }));
    },
  };
}

/**
 * esbuild's options for the server: the bundle written to outdir, its source URLs relative to urlBase. The
 * release (scripts/tooling/release.mjs) builds with these too.
 */
export function serverBuildOptions(root, outdir, urlBase) {
  return {
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    // main.ts loads the server only after reading its command line and configuration: --help and a bad
    // variable answer without loading it.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    outdir,
    metafile: true,
    logLevel: 'error',
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const __requirePackage = __createRequire(import.meta.url);",
    },
    plugins: [sourceUrls(urlBase), requirePackages()],
  };
}

/** Builds into .build/server/<content hash>/ and records it; older builds are removed. */
async function build(root) {
  const esbuild = await import('esbuild');
  const dir = buildDir(root);
  // Every build lives at the same depth (.build/server/<id>/), which is what the source URLs are relative to.
  const placeholder = join(dir, 'id');
  // esbuild's service is a child process that would otherwise live as long as the server it built.
  const result = await esbuild
    .build({ ...serverBuildOptions(root, placeholder, placeholder), write: false })
    .finally(() => esbuild.stop());
  const files = result.outputFiles.map((f) => ({ name: relative(placeholder, f.path), contents: f.contents }));
  const id = hash(files.map((f) => `${f.name}\0${hash(f.contents)}\n`).join('')).slice(0, 16);
  if (!existsSync(join(dir, id))) {
    // Written aside, then renamed: a process starting meanwhile sees the whole build or none.
    const aside = join(dir, `${id}.${process.pid}.tmp`);
    for (const f of files) {
      mkdirSync(join(aside, f.name, '..'), { recursive: true });
      writeFileSync(join(aside, f.name), f.contents);
    }
    try {
      renameSync(aside, join(dir, id));
    } catch (e) {
      // Another start built the same meanwhile.
      if (!existsSync(join(dir, id))) throw e;
      rmSync(aside, { recursive: true, force: true });
    }
  }
  // esbuild names the plugins' modules namespace:path; they are no files of ours.
  const sources = Object.keys(result.metafile.inputs).filter((input) => !input.startsWith('required-package:'));
  const from = Object.fromEntries([...sources, ...alsoFrom].sort().map((file) => [file, hashOf(root, file)]));
  const record = { main: `${id}/main.js`, from };
  writeFileSync(`${recordFile(root)}.${process.pid}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(`${recordFile(root)}.${process.pid}.tmp`, recordFile(root));
  for (const e of readdirSync(dir))
    if (e !== id && e !== 'current.json' && !e.endsWith('.tmp')) rmSync(join(dir, e), { recursive: true, force: true });
  return record;
}

/** The path of the current build's main.js, built first when there is none or a source changed since. */
export async function currentBuild(root) {
  let record;
  try {
    record = JSON.parse(readFileSync(recordFile(root), 'utf8'));
  } catch {
    // none, or unreadable: built again
  }
  const why = staleness(root, record);
  if (why !== undefined) {
    // On stderr, as ensure-ready says what it does: stdout is the server's.
    console.error(`> ${why}: building the server into ${relative(root, buildDir(root))}/`);
    mkdirSync(buildDir(root), { recursive: true });
    record = await build(root);
  }
  return join(buildDir(root), record.main);
}
