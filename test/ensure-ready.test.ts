// scripts/ensure-ready.mjs on a scratch project, with a stand-in npm on PATH that records what it is asked to
// do: installs and generates when, and only when, what they come from changed (by content), and says why.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ensureReady = resolve('scripts/ensure-ready.mjs');
const sourceHash = resolve('scripts/source-hash.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'platform-api-ready-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

const bin = join(scratch, 'bin');
const npmLog = join(scratch, 'npm.log');
mkdirSync(bin);
// The stand-in does what the real commands leave behind: an install's hidden lockfile; a generated model and
// the generator's record of its sources.
const record = `import('${sourceHash}').then((m) => console.log(JSON.stringify(m.sourceHashes())))`;
writeFileSync(
  join(bin, 'npm'),
  `#!/bin/sh
echo "$*" >> "${npmLog}"
echo "npm output"
case "$*" in
  "ci --include=dev --no-audit --no-fund --prefix bench") mkdir -p bench/node_modules && echo '{}' > bench/node_modules/.package-lock.json ;;
  ci*|install*) mkdir -p node_modules && echo '{}' > node_modules/.package-lock.json ;;
  "run -s generate") mkdir -p generated && echo model > generated/model.ts && node -e "${record}" > generated/.source-hash ;;
esac
`,
);
chmodSync(join(bin, 'npm'), 0o755);

function project(name: string): string {
  const dir = join(scratch, name);
  for (const [file, text] of Object.entries({
    'package-lock.json': '{"lockfileVersion": 3}\n',
    'spec/a.yaml': 'domain: a\n',
    'spec/b.yaml': 'domain: b\n',
    'generator/main.ts': '// generator\n',
    'runtime/model/api-model.ts': '// model\n',
  })) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

function ready(dir: string, ...args: string[]) {
  rmSync(npmLog, { force: true });
  const r = spawnSync(process.execPath, [ensureReady, ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
  });
  const npm = existsSync(npmLog) ? readFileSync(npmLog, 'utf8').trim().split('\n') : [];
  return { ...r, npm };
}

const productionInstall = 'ci --omit=dev --no-audit --no-fund';
const fullInstall = 'ci --include=dev --no-audit --no-fund';
const devAdded = 'install --include=dev --no-save --no-audit --no-fund';

test('a fresh clone: installs the production set, then generates, saying why on stderr and nothing on stdout', () => {
  const dir = project('fresh');
  const r = ready(dir);
  assert.is(r.status, 0, r.stderr);
  assert.equal(r.npm, [productionInstall, 'run -s generate']);
  assert.match(r.stderr, `> dependencies are not installed: npm ${productionInstall}`);
  assert.match(r.stderr, '> generated/ is missing: npm run -s generate');
  assert.match(r.stderr, 'npm output', "the commands' output goes to stderr");
  assert.is(r.stdout, '', 'stdout stays clean for TOKEN=$(npm run -s token)');
  const again = ready(dir);
  assert.equal([again.status, again.npm, again.stderr], [0, [], ''], 'nothing to do: no npm call, no output');
});

test('removing or renaming a spec file regenerates; touching one does not', () => {
  const dir = project('spec-changes');
  ready(dir);
  utimesSync(join(dir, 'spec/a.yaml'), new Date(), new Date(Date.now() + 60_000));
  assert.equal(ready(dir).npm, [], 'same content, newer time');
  renameSync(join(dir, 'spec/b.yaml'), join(dir, 'spec/c.yaml'));
  let r = ready(dir);
  assert.equal(r.npm, ['run -s generate']);
  assert.match(r.stderr, '> spec/ changed since the last generate: npm run -s generate');
  rmSync(join(dir, 'spec/c.yaml'));
  assert.equal(ready(dir).npm, ['run -s generate'], 'a removed file');
  writeFileSync(join(dir, 'runtime/model/api-model.ts'), '// model, changed\n');
  writeFileSync(join(dir, 'generator/main.ts'), '// generator, changed\n');
  r = ready(dir);
  assert.match(r.stderr, '> generator/ and runtime/model/api-model.ts changed since the last generate');
  assert.equal(ready(dir).npm, []);
  rmSync(join(dir, 'generated/.source-hash'));
  assert.match(ready(dir).stderr, '> generated/ does not record what it was generated from');
});

test('a changed package-lock.json reinstalls; --install-only does not generate', () => {
  const dir = project('lock-changes');
  ready(dir);
  utimesSync(join(dir, 'package-lock.json'), new Date(), new Date(Date.now() + 60_000));
  assert.equal(ready(dir).npm, [], 'same content, newer time');
  writeFileSync(join(dir, 'package-lock.json'), '{"lockfileVersion": 3, "packages": {}}\n');
  writeFileSync(join(dir, 'spec/a.yaml'), 'domain: a2\n');
  const r = ready(dir, '--install-only');
  assert.equal(r.npm, [productionInstall]);
  assert.match(r.stderr, '> package-lock.json changed since the last install: npm ci');
  writeFileSync(join(dir, 'package-lock.json'), '{"lockfileVersion": 3, "packages": {"": {}}}\n');
  assert.equal(ready(dir, '--dev', '--install-only').npm, [fullInstall], 'a changed lock and --dev: all of it');
  assert.equal(ready(dir).npm, ['run -s generate']);
});

test('an install made before installs were recorded is adopted when newer than the lock, else redone', () => {
  const dir = project('unrecorded');
  mkdirSync(join(dir, 'node_modules'));
  writeFileSync(join(dir, 'node_modules/.package-lock.json'), '{}');
  utimesSync(join(dir, 'package-lock.json'), new Date(), new Date(Date.now() - 60_000));
  assert.equal(ready(dir, '--install-only').npm, []);
  assert.ok(existsSync(join(dir, 'node_modules/.lock-hash')), 'adopted');
  const older = project('unrecorded-older');
  mkdirSync(join(older, 'node_modules'));
  writeFileSync(join(older, 'node_modules/.package-lock.json'), '{}');
  utimesSync(join(older, 'node_modules/.package-lock.json'), new Date(), new Date(Date.now() - 60_000));
  assert.equal(ready(older, '--install-only').npm, [productionInstall]);
});

test('npm start installs the production set; a developer command adds the devDependencies once', () => {
  const dir = project('production-first');
  assert.equal(ready(dir).npm, [productionInstall, 'run -s generate']);
  assert.match(readFileSync(join(dir, 'node_modules/.lock-hash'), 'utf8'), /^[0-9a-f]{64} production\n$/);
  const r = ready(dir, '--dev');
  assert.equal(r.npm, [devAdded], 'added to the install, not installed again');
  assert.match(r.stderr, `> the devDependencies are not installed: npm ${devAdded}`);
  assert.match(readFileSync(join(dir, 'node_modules/.lock-hash'), 'utf8'), / full\n$/);
  assert.equal(ready(dir, '--dev').npm, [], 'added once');
  assert.equal(ready(dir).npm, [], 'npm start after it: nothing to do');
});

test('a developer command first installs everything, and npm start after it installs nothing', () => {
  const dir = project('full-first');
  assert.equal(ready(dir, '--dev').npm, [fullInstall, 'run -s generate']);
  const r = ready(dir);
  assert.equal([r.npm, r.stderr], [[], '']);
});

test('a record without a set is of a full install; an unrecorded one is adopted as npm installed it', () => {
  const dir = project('record-without-set');
  ready(dir, '--dev');
  const record = join(dir, 'node_modules/.lock-hash');
  writeFileSync(record, readFileSync(record, 'utf8').replace(' full', ''));
  assert.equal(ready(dir, '--dev').npm, [], 'as recorded before the two sets');
  // As the Dockerfile's npm ci --omit=dev leaves it: no record, a hidden lock without dev-only packages.
  const plain = project('plain-npm-ci');
  mkdirSync(join(plain, 'node_modules'));
  writeFileSync(join(plain, 'node_modules/.package-lock.json'), '{"packages": {"node_modules/a": {}}}');
  utimesSync(join(plain, 'package-lock.json'), new Date(), new Date(Date.now() - 60_000));
  assert.equal(ready(plain, '--install-only').npm, []);
  assert.equal(ready(plain, '--dev', '--install-only').npm, [devAdded], 'adopted as the production set');
  const everything = project('plain-npm-ci-full');
  mkdirSync(join(everything, 'node_modules'));
  writeFileSync(
    join(everything, 'node_modules/.package-lock.json'),
    '{"packages": {"node_modules/a": {}, "node_modules/uvu": {"dev": true}}}',
  );
  utimesSync(join(everything, 'package-lock.json'), new Date(), new Date(Date.now() - 60_000));
  assert.equal(ready(everything, '--dev', '--install-only').npm, [], 'adopted as a full install');
});

test('node_modules linked from another checkout is never reinstalled through the link', () => {
  const shared = project('shared');
  ready(shared);
  const dir = project('linked');
  symlinkSync(join(shared, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package-lock.json'), '{"lockfileVersion": 3, "other": true}\n');
  const r = ready(dir, '--install-only');
  assert.is(r.status, 0, r.stderr);
  assert.equal(r.npm, []);
  assert.match(r.stderr, /node_modules links to .*shared\/node_modules, installed from another package-lock\.json/);
  const same = project('linked-production');
  symlinkSync(join(shared, 'node_modules'), join(same, 'node_modules'));
  const dev = ready(same, '--dev', '--install-only');
  assert.equal(dev.npm, [], 'the devDependencies are not added through the link either');
  assert.match(dev.stderr, /links to .*shared\/node_modules, installed without the devDependencies; not reinstalling/);
});

test("--bench installs the benchmark's own package once, and only --bench does", () => {
  const dir = project('bench');
  mkdirSync(join(dir, 'bench'));
  writeFileSync(join(dir, 'bench/package-lock.json'), '{"lockfileVersion": 3}\n');
  assert.equal(ready(dir).npm, [productionInstall, 'run -s generate'], 'npm start and the rest: not the bench');
  const r = ready(dir, '--bench');
  assert.equal(r.npm, [`${fullInstall} --prefix bench`]);
  assert.match(
    r.stderr,
    `> the benchmark's baselines (bench/package.json) are not installed: npm ${fullInstall} --prefix bench`,
  );
  assert.equal(ready(dir, '--bench').npm, [], 'installed once');
  writeFileSync(join(dir, 'bench/package-lock.json'), '{"lockfileVersion": 3, "packages": {}}\n');
  assert.match(ready(dir, '--bench').stderr, '> bench/package-lock.json changed since the last install');
});

test.run();
