// Runs before every npm script that needs dependencies or generated/: installs them with npm ci when
// package-lock.json is not what node_modules/ was installed from, and regenerates generated/ when spec/,
// generator/ or runtime/model/api-model.ts are not what it was generated from (content hashes: a removed or renamed
// file counts). Says what it does, on stderr so that `TOKEN=$(npm run -s token)` stays the token alone.
// Plain Node: it runs before any install. `--install-only` is for pregenerate, which must not regenerate.
// `--bench` also installs the benchmark's own package (bench/: its baselines, which nothing else needs) the same
// way, so that the first `npm run bench` installs them and no other command does.
import { execSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sourceHashes, sourceRecordFile } from './source-hash.mjs';

const hash = (data) => createHash('sha256').update(data).digest('hex');
const read = (file) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);

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

/** Installs the package in dir (the project, or bench/) unless its node_modules was installed from its lock. */
function ensureInstalled(dir, what) {
  const at = (file) => join(dir, file);
  const lockRecord = at('node_modules/.lock-hash');
  const lockHash = hash(readFileSync(at('package-lock.json')));
  const recorded = read(lockRecord)?.trim();
  if (recorded === lockHash) return;
  if (lstatSync(at('node_modules'), { throwIfNoEntry: false })?.isSymbolicLink()) {
    // npm ci empties node_modules/ through the link, under every checkout that shares it: never do that here.
    if (!existsSync(at('node_modules'))) {
      console.error(
        `node_modules is a link to a directory that does not exist; remove the link or point it at an install`,
      );
      process.exit(1);
    }
    if (recorded !== undefined) {
      console.error(
        `> ${at('node_modules')} links to ${realpathSync(at('node_modules'))}, installed from another package-lock.json; not reinstalling through a link (run npm ci where it points, or replace the link)`,
      );
    }
    return;
  }
  const installedAt = existsSync(at('node_modules/.package-lock.json'))
    ? statSync(at('node_modules/.package-lock.json')).mtimeMs
    : 0;
  if (recorded === undefined && installedAt > statSync(at('package-lock.json')).mtimeMs) {
    // Installed before installs were recorded, and since the last change of the lock: adopt it.
    writeFileSync(lockRecord, `${lockHash}\n`);
    return;
  }
  const why =
    installedAt === 0 ? `${what} are not installed` : `${at('package-lock.json')} changed since the last install`;
  run(why, `npm ci --no-audit --no-fund${dir === '.' ? '' : ` --prefix ${dir}`}`);
  writeFileSync(lockRecord, `${lockHash}\n`);
}

function ensureGenerated() {
  const current = sourceHashes();
  const recordText = read(join('generated', sourceRecordFile));
  let why;
  if (!existsSync('generated/model.ts')) why = 'generated/ is missing';
  else if (recordText === undefined)
    why = `generated/ does not record what it was generated from (generated/${sourceRecordFile})`;
  else {
    let recorded = {};
    try {
      recorded = JSON.parse(recordText);
    } catch {
      // an unreadable record: every source counts as changed
    }
    const changed = Object.keys(current).filter((s) => recorded[s] !== current[s]);
    if (changed.length === 0) return;
    why = `${changed.join(' and ')} changed since the last generate`;
  }
  // The generator records the hashes of what it read.
  run(why, 'npm run -s generate');
}

ensureInstalled('.', 'dependencies');
if (process.argv.includes('--bench')) ensureInstalled('bench', "the benchmark's baselines (bench/package.json)");
if (!process.argv.includes('--install-only')) ensureGenerated();
