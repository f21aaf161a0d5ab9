// npm run build [-- --out DIR]: the release, a folder that serves the API with one command and no TypeScript
// tooling (`node --enable-source-maps server/main.js`, as the Dockerfile's CMD runs it). It holds:
//   server/         the server bundled into plain JavaScript (scripts/server-build.mjs's options), and the token
//                   command (server/token.js: a first token for the owner, as npm run token mints it);
//   runtime/        the files the bundle reads beside its sources (the read worker);
//   generated/      what the server reads of generated/ at run time (openapi.json, the .proto files, validators);
//   node_modules/   the server's dependencies (package.json's "dependencies" but the tools that make the server
//                   from its sources, with what they depend on as package-lock.json pins it), copied from this
//                   install with their native builds (better-sqlite3), so the release runs on the Node that
//                   built it (the Dockerfile builds and runs on the same node:20-slim);
//   package.json    name, version and the server's dependencies, LICENSE.
// The bundle's source URLs are laid out as in this repository (server/main.js stands for server/main.ts), so the
// paths code resolves against its own file (generated/, the read worker, redoc's bundle) hold in the release too.
// Fails, naming it, when the bundle imports a package that package.json does not list in "dependencies", or one of
// the tools.
import { builtinModules } from 'node:module';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { serverBuildOptions } from '../server-build.mjs';

const usage = `usage: npm run build [-- --out DIR]
Builds the release into DIR (default dist/release): the server as plain JavaScript, its production dependencies
and the generated parts it reads. Start it with \`node --enable-source-maps server/main.js\` in DIR; mint a token
with \`node server/token.js\` there.`;

let values;
try {
  ({ values } = parseArgs({
    options: { out: { type: 'string', default: 'dist/release' }, help: { type: 'boolean', short: 'h' } },
  }));
} catch (e) {
  console.error(`build: ${e.message}; see --help`);
  process.exit(2);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}

const root = fileURLToPath(new URL('../..', import.meta.url));
const out = resolve(values.out);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** The generated files the server reads at run time (the rest of generated/ is bundled or not served). */
const generatedFiles = ['openapi.json', 'proto', 'validators'];
/** Files of ours the bundle reads beside its sources. */
const runtimeFiles = ['runtime/storage/read-worker.js', 'runtime/storage/checkpoint-worker.js'];

/** A bare import's package name: `@scope/name/sub` -> `@scope/name`. */
const packageOf = (path) =>
  path
    .split('/')
    .slice(0, path.startsWith('@') ? 2 : 1)
    .join('/');

/**
 * What npm start needs on a clone to make the server from its sources, and the release does not: the generator
 * (ts-morph, the OpenAPI check), the start-up build (esbuild) and the command lines' TypeScript loader (tsx).
 */
const buildTools = ['@readme/openapi-parser', 'esbuild', 'ts-morph', 'tsx'];
const serverDependencies = Object.fromEntries(
  Object.entries(pkg.dependencies).filter(([name]) => !buildTools.includes(name)),
);

/** The packages the bundle imports, each one of the server's dependencies, or the build fails. */
function checkImports(metafile) {
  const builtins = new Set(builtinModules);
  const imported = new Set();
  for (const output of Object.values(metafile.outputs))
    for (const i of output.imports)
      if (i.external && !i.path.startsWith('node:') && !builtins.has(i.path)) imported.add(packageOf(i.path));
  const tools = [...imported].filter((name) => buildTools.includes(name)).sort();
  if (tools.length > 0) throw new Error(`the server imports ${tools.join(', ')}, which the release leaves out`);
  const undeclared = [...imported].filter((name) => !(name in pkg.dependencies)).sort();
  if (undeclared.length > 0)
    throw new Error(`the server imports ${undeclared.join(', ')}, not in package.json's "dependencies"`);
}

/**
 * What a package folder holds that nothing runs: command links, and what a native build leaves beside its
 * module (node-gyp's objects and archives, better-sqlite3's SQLite sources).
 */
const unused = /\/(\.bin|build\/Release\/(obj|obj\.target|\.deps)|build\/deps|better-sqlite3\/(deps|src))$|\.a$/;

/**
 * The lock's entries of the server's dependencies and of all they depend on (peers too), found as Node finds
 * them: in the dependent's own node_modules/, then in each one above it.
 */
function serverPackages(lock) {
  const entryOf = (from, name) => {
    for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf('/node_modules/')))) {
      const path = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
      if (lock.packages[path]) return path;
      if (base === '') return undefined;
    }
  };
  const found = new Set();
  const pending = Object.keys(serverDependencies).map((name) => entryOf('', name));
  while (pending.length > 0) {
    const path = pending.pop();
    if (path === undefined || found.has(path)) continue;
    found.add(path);
    const e = lock.packages[path];
    const optionalPeers = Object.keys(e.peerDependenciesMeta ?? {}).filter((n) => e.peerDependenciesMeta[n].optional);
    const peers = Object.keys(e.peerDependencies ?? {}).filter((n) => !optionalPeers.includes(n));
    for (const name of new Set([...Object.keys({ ...e.dependencies, ...e.optionalDependencies }), ...peers]))
      pending.push(entryOf(path, name));
  }
  return found;
}

/** Copies the server's dependencies' folders from node_modules. */
function copyDependencies() {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const copied = [];
  for (const path of [...serverPackages(lock)].sort()) {
    // A nested package comes with the folder of the package it is nested in.
    if (copied.some((c) => path.startsWith(`${c}/`))) continue;
    // Optional packages of other platforms are in the lock but not installed.
    if (!existsSync(join(root, path))) continue;
    cpSync(join(root, path), join(out, path), {
      recursive: true,
      dereference: true,
      filter: (src) => !unused.test(src),
    });
    copied.push(path);
  }
  return copied.length;
}

const started = performance.now();
rmSync(out, { recursive: true, force: true });
const esbuild = await import('esbuild');
let result;
try {
  const options = serverBuildOptions(root, join(out, 'server'), join(root, 'server'));
  // Both entries share the bundle's chunks: main.js and token.js side by side in server/.
  result = await esbuild.build({ ...options, entryPoints: [...options.entryPoints, 'server/token.ts'] });
} catch (e) {
  console.error(`build: cannot bundle the server (${e.message.split('\n')[0]}); fix the error above`);
  process.exit(1);
} finally {
  await esbuild.stop();
}
try {
  checkImports(result.metafile);
} catch (e) {
  console.error(`build: ${e.message}`);
  process.exit(1);
}
for (const file of generatedFiles)
  cpSync(join(root, 'generated', file), join(out, 'generated', file), { recursive: true });
for (const file of runtimeFiles) {
  mkdirSync(dirname(join(out, file)), { recursive: true });
  cpSync(join(root, file), join(out, file));
}
cpSync(join(root, 'LICENSE'), join(out, 'LICENSE'));
const packages = copyDependencies();
const release = {
  name: pkg.name,
  version: pkg.version,
  private: true,
  description: pkg.description,
  license: pkg.license,
  type: 'module',
  engines: pkg.engines,
  scripts: { start: 'node --enable-source-maps server/main.js', token: 'node server/token.js' },
  dependencies: serverDependencies,
};
writeFileSync(join(out, 'package.json'), `${JSON.stringify(release, null, 2)}\n`);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `built ${pkg.name} ${pkg.version} into ${relative(process.cwd(), out) || '.'}/ in ${seconds} s (${packages} packages); start it there with: node --enable-source-maps server/main.js`,
);
