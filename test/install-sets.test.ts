// What a fresh clone installs: the commands that serve and operate (npm start, token, generate, build, ...) run
// on package.json's "dependencies" alone (ensure-ready installs them with npm ci --omit=dev), the developers'
// commands (test, lint, typecheck, ...) add the devDependencies. Checked without an install: every file those
// commands run, followed through its imports, imports no package outside "dependencies", and package-lock.json
// leaves the development tools out of the production set. Then a copy of the repository whose node_modules holds
// the production set alone (copied from this install, as npm ci --omit=dev lays it out) generates, builds and
// answers ping with npm start.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exitOf, outcome } from './support/process.js';

interface PackageJson {
  name: string;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}
interface LockEntry {
  dev?: boolean;
  bin?: Record<string, string>;
}
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as PackageJson;
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockEntry> };

/** The developers' commands: their pre-script asks ensure-ready for the devDependencies too. */
const developerCommands = (): string[] =>
  Object.keys(pkg.scripts).filter((s) => pkg.scripts[`pre${s}`]?.includes('--dev'));

/** The other commands, which install the production set: each is `tsx FILE` or `node FILE`. */
const servingCommands = (): [string, { runner: string; file: string }][] =>
  Object.keys(pkg.scripts)
    .filter((s) => pkg.scripts[`pre${s}`]?.includes('ensure-ready') && !developerCommands().includes(s))
    .map((s) => {
      const m = /^(tsx|node) (\S+)/.exec(pkg.scripts[s]);
      assert.ok(m, `npm run ${s}: ${pkg.scripts[s]} runs no file`);
      return [s, { runner: m[1], file: m[2] }];
    });

/**
 * The files those commands run, and what they run that is no import of theirs: ensure-ready, npm start's build
 * of server/main.ts, a new API's commands (scripts/api.mjs, its start: server/project.ts).
 */
const servingEntries = (): string[] => [
  ...servingCommands().map(([, c]) => c.file),
  ...['scripts/ensure-ready.mjs', 'server/main.ts', 'scripts/api.mjs', 'server/project.ts'],
];

/** A bare import's package name: `@scope/name/sub` -> `@scope/name`. */
const packageOf = (path: string) =>
  path
    .split('/')
    .slice(0, path.startsWith('@') ? 2 : 1)
    .join('/');

/** A relative import's file: `./x.js` is `./x.ts` in the sources. */
function fileOf(from: string, path: string): string | undefined {
  const base = resolve(dirname(from), path);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

// Static imports and exports, import() and require() of a literal; `import type` is erased.
const importPattern =
  /(?:^|\n)\s*(?:import(?!\s+type\s)[^'"`;]*?from\s*|export[^'"`;]*?from\s*|import\s*)['"]([^'"]+)['"]|(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every package the files import, directly or through our files they import, with the file that imports it. */
function importedPackages(entries: string[]): Map<string, string> {
  const packages = new Map<string, string>();
  const seen = new Set<string>();
  const queue = entries.map((e) => resolve(e));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file) || !/\.(ts|mjs|js|cjs)$/.test(file)) continue;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(importPattern)) {
      const path = m[1] ?? m[2];
      if (path.startsWith('.')) {
        const target = fileOf(file, path);
        if (target) queue.push(target);
      } else if (!path.startsWith('node:') && !builtinModules.includes(path)) {
        if (!packages.has(packageOf(path))) packages.set(packageOf(path), relative('.', file));
      }
    }
  }
  return packages;
}

test('the commands that serve and operate import only packages of "dependencies"', () => {
  const entries = servingEntries();
  for (const c of ['start', 'generate', 'build', 'token', 'import', 'grpc'])
    assert.ok(
      entries.includes(/^(?:tsx|node) (\S+)/.exec(pkg.scripts[c])![1]),
      `npm run ${c} installs the production set`,
    );
  const imported = importedPackages(entries);
  for (const [name, c] of servingCommands()) if (c.runner === 'tsx') imported.set('tsx', `npm run ${name}`);
  for (const p of ['better-sqlite3', 'esbuild', 'ts-morph', 'tsx', '@grpc/grpc-js'])
    assert.ok(imported.has(p), `the walk finds ${p}: it follows the imports`);
  // platform-api: the framework itself, as a new API's project imports it (scripts/new-api.ts writes that).
  const outside = [...imported]
    .filter(([p]) => !(p in pkg.dependencies) && p !== 'platform-api')
    .map(([p, by]) => `${p} (by ${by})`);
  assert.equal(outside, [], 'imported but only a devDependency (or not declared)');
});

test("the developers' commands install the devDependencies", () => {
  assert.equal(developerCommands().sort(), ['bench', 'format', 'golden', 'lint', 'test', 'typecheck']);
});

/** The lock's production set: the entries npm ci --omit=dev installs. */
const productionSet = () =>
  Object.entries(lock.packages)
    .filter(([path, e]) => path.startsWith('node_modules/') && !e.dev)
    .map(([path]) => path);

test('package-lock.json leaves the development tools out of the production set', () => {
  const production = new Set(productionSet());
  for (const tool of [
    'eslint',
    'prettier',
    'uvu',
    'typescript',
    'typescript-eslint',
    '@stoplight/spectral-core',
    '@redocly/openapi-core',
    'diff',
  ])
    assert.not.ok(production.has(`node_modules/${tool}`), `${tool} is installed by npm ci --omit=dev`);
  for (const name of Object.keys(pkg.dependencies))
    assert.ok(production.has(`node_modules/${name}`), `the lock installs ${name} with --omit=dev`);
});

const scratch = mkdtempSync(join(tmpdir(), 'platform-api-install-sets-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * The repository's files (the working tree's, as a clone of this commit with its edits would have them) in dir,
 * and a node_modules/ holding the lock's production set alone, as npm ci --omit=dev lays it out: each top-level
 * package a link to this install's (what it depends on is the lock's business, checked above), its commands in
 * .bin/, the install recorded as ensure-ready records its production path.
 */
function productionCopy(dir: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    encoding: 'utf8',
  });
  for (const file of files.split('\0').filter((f) => f !== '' && lstatSync(f, { throwIfNoEntry: false })?.isFile())) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(file, join(dir, file));
  }
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  for (const path of productionSet()) {
    // Nested packages come with their parent's folder; other platforms' optional packages are not installed.
    if (path.lastIndexOf('node_modules/') > 0 || !existsSync(path)) continue;
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    symlinkSync(realpathSync(path), join(dir, path));
    for (const [name, bin] of Object.entries(lock.packages[path].bin ?? {}))
      if (!existsSync(join(modules, '.bin', name)))
        symlinkSync(join('..', relative('node_modules', path), bin), join(modules, '.bin', name));
  }
  const lockHash = createHash('sha256').update(readFileSync('package-lock.json')).digest('hex');
  writeFileSync(join(modules, '.lock-hash'), `${lockHash} production\n`);
}

test('with the production set alone, npm start generates, builds and answers ping; npm run token works', async () => {
  const dir = join(scratch, 'clone');
  productionCopy(dir);
  for (const tool of ['eslint', 'prettier', 'uvu', 'typescript'])
    assert.not.ok(existsSync(join(dir, 'node_modules', tool)), `no ${tool}`);
  const env = { ...process.env, PORT: '0', DATA_DIR: join(scratch, 'data'), LOG: 'off', DRAIN_SECONDS: '0' };
  // Its own process group: npm runs the server as a grandchild, stopped with it.
  const server = spawn('npm', ['start'], { cwd: dir, env, detached: true });
  let out = '';
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      };
      server.stdout.on('data', onData);
      server.stderr.on('data', onData);
      server.on('exit', (code) => reject(new Error(`npm start exited with ${code}: ${out}`)));
    });
    assert.match(out, '> generated/ is missing: npm run -s generate', 'it generated');
    assert.match(out, 'building the server', 'and built');
    assert.not.match(out, /npm ci|npm install|not installed/, `nothing installed: ${out}`);
    assert.equal(await (await fetch(`${url}/ping/v2/ping`)).json(), { response: 'pong' });
    const token = await outcome(spawn('npm', ['run', '-s', 'token'], { cwd: dir, env }));
    assert.is(token.status, 0, token.stderr);
    assert.match(token.stdout, /^[\w-]+\.[\w-]+\.[\w-]+\n$/);
  } finally {
    if (server.exitCode === null) {
      process.kill(-server.pid!, 'SIGTERM');
      await exitOf(server);
    }
  }
});

test.run();
