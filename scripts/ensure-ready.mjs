// Runs before every npm script that needs dependencies or generated/: installs them with npm ci when
// package-lock.json is not what node_modules/ was installed from, and regenerates generated/ when spec/,
// generator/ or runtime/model.ts are not what it was generated from (content hashes: a removed or renamed file
// counts). Says what it does, on stderr so that `TOKEN=$(npm run -s token)` stays the token alone.
// Plain Node: it runs before any install. `--install-only` is for pregenerate, which must not regenerate.
import { execSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const lockRecord = 'node_modules/.lock-hash';
const sourceRecord = 'generated/.source-hash';
const sources = ['spec', 'generator', 'runtime/model.ts'];

const hash = (data) => createHash('sha256').update(data).digest('hex');
const read = (file) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);

/** The hash of a file, or of a directory's files with their paths, in a fixed order. */
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
  return hash(files.sort().map((f) => `${f}\0${hash(readFileSync(f))}\n`).join(''));
}

function run(why, command) {
  console.error(`> ${why}: ${command}`);
  try {
    // stdout too goes to stderr: ours must stay clean for the script that follows.
    execSync(command, { stdio: ['inherit', process.stderr, 'inherit'] });
  } catch {
    console.error(`'${command}' failed; fix the error above and run it again`);
    process.exit(1);
  }
}

function ensureInstalled() {
  const lockHash = hash(readFileSync('package-lock.json'));
  const recorded = read(lockRecord)?.trim();
  if (recorded === lockHash) return;
  if (lstatSync('node_modules', { throwIfNoEntry: false })?.isSymbolicLink()) {
    // npm ci empties node_modules/ through the link, under every checkout that shares it: never do that here.
    if (!existsSync('node_modules')) {
      console.error(`node_modules is a link to a directory that does not exist; remove the link or point it at an install`);
      process.exit(1);
    }
    if (recorded !== undefined) {
      console.error(`> node_modules links to ${realpathSync('node_modules')}, installed from another package-lock.json; not reinstalling through a link (run npm ci where it points, or replace the link)`);
    }
    return;
  }
  const installedAt = existsSync('node_modules/.package-lock.json') ? statSync('node_modules/.package-lock.json').mtimeMs : 0;
  if (recorded === undefined && installedAt > statSync('package-lock.json').mtimeMs) {
    // Installed before installs were recorded, and since the last change of the lock: adopt it.
    writeFileSync(lockRecord, `${lockHash}\n`);
    return;
  }
  const why = installedAt === 0 ? 'dependencies are not installed' : 'package-lock.json changed since the last install';
  run(why, 'npm ci --no-audit --no-fund');
  writeFileSync(lockRecord, `${lockHash}\n`);
}

function ensureGenerated() {
  const current = Object.fromEntries(sources.map((s) => [s, hashOf(s)]));
  const recordText = read(sourceRecord);
  let why;
  if (!existsSync('generated/model.ts')) why = 'generated/ is missing';
  else if (recordText === undefined) why = `generated/ does not record what it was generated from (${sourceRecord})`;
  else {
    let recorded = {};
    try {
      recorded = JSON.parse(recordText);
    } catch {
      // an unreadable record: every source counts as changed
    }
    const changed = sources.filter((s) => recorded[s] !== current[s]).map((s) => (s.includes('.') ? s : `${s}/`));
    if (changed.length === 0) return;
    why = `${changed.join(' and ')} changed since the last generate`;
  }
  run(why, 'npm run -s generate');
  writeFileSync(sourceRecord, `${JSON.stringify(current, null, 2)}\n`);
}

ensureInstalled();
if (!process.argv.includes('--install-only')) ensureGenerated();
