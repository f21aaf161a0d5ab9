// Runs before every npm script that needs dependencies or generated/: installs them with npm ci when
// package-lock.json is not what node_modules/ was installed from, and regenerates generated/ when spec/,
// generator/ or runtime/model/api-model.ts are not what it was generated from (content hashes: a removed or renamed
// file counts). Says what it does, on stderr so that `TOKEN=$(npm run -s token)` stays the token alone.
// Plain Node: it runs before any install. `--install-only` is for pregenerate, which must not regenerate.
// Two sets: the commands that serve and operate (start, generate, build, token, ...) need package.json's
// "dependencies" alone (npm ci --omit=dev: no linter, test runner or type checker is fetched or built); `--dev`,
// before the developers' commands (test, lint, typecheck, ...), also wants the devDependencies, and adds them to a
// production install without reinstalling it. node_modules/.lock-hash records the lock's hash and the set.
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

const production = 'production';
const full = 'full';

/** The recorded install: the lock's hash and the set; a record without a set is of a full install (npm ci). */
function recordOf(text) {
  if (text === undefined) return undefined;
  const [hash, set = full] = text.trim().split(' ');
  return { hash, set };
}

/**
 * Installs the package in dir (the project, or bench/) unless its node_modules was installed from its lock, with
 * the devDependencies too when wanted is `full`.
 */
function ensureInstalled(dir, what, wanted) {
  const at = (file) => join(dir, file);
  const lockRecord = at('node_modules/.lock-hash');
  const lockHash = hash(readFileSync(at('package-lock.json')));
  const recorded = recordOf(read(lockRecord));
  const sameLock = recorded?.hash === lockHash;
  if (sameLock && (recorded.set === full || wanted === production)) return;
  if (lstatSync(at('node_modules'), { throwIfNoEntry: false })?.isSymbolicLink()) {
    // npm ci empties node_modules/ through the link, under every checkout that shares it: never do that here.
    if (!existsSync(at('node_modules'))) {
      console.error(
        `node_modules is a link to a directory that does not exist; remove the link or point it at an install`,
      );
      process.exit(1);
    }
    if (recorded !== undefined) {
      const differs = sameLock ? 'installed without the devDependencies' : 'installed from another package-lock.json';
      console.error(
        `> ${at('node_modules')} links to ${realpathSync(at('node_modules'))}, ${differs}; not reinstalling through a link (run npm ci where it points, or replace the link)`,
      );
    }
    return;
  }
  const hiddenLock = at('node_modules/.package-lock.json');
  const installedAt = existsSync(hiddenLock) ? statSync(hiddenLock).mtimeMs : 0;
  if (recorded === undefined && installedAt > statSync(at('package-lock.json')).mtimeMs) {
    // Installed before installs were recorded (or by a plain npm ci, as the Dockerfile does), and since the last
    // change of the lock: adopted, as a full install when npm installed a dev-only package.
    const set = Object.values(JSON.parse(readFileSync(hiddenLock, 'utf8')).packages ?? {}).some((p) => p.dev)
      ? full
      : production;
    writeFileSync(lockRecord, `${lockHash} ${set}\n`);
    return ensureInstalled(dir, what, wanted);
  }
  const flags = `--no-audit --no-fund${dir === '.' ? '' : ` --prefix ${dir}`}`;
  if (sameLock) {
    // The production set is there: npm install adds the rest as the lock pins it (--no-save: the lock stays as
    // it is), without building again what is installed (better-sqlite3).
    run('the devDependencies are not installed', `npm install --include=dev --no-save ${flags}`);
  } else {
    const why =
      installedAt === 0 ? `${what} are not installed` : `${at('package-lock.json')} changed since the last install`;
    // Explicit either way: NODE_ENV=production alone would make npm leave the devDependencies out.
    run(why, `npm ci ${wanted === full ? '--include=dev' : '--omit=dev'} ${flags}`);
  }
  writeFileSync(lockRecord, `${lockHash} ${wanted}\n`);
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

const wanted = process.argv.includes('--dev') ? full : production;
ensureInstalled('.', 'dependencies', wanted);
if (process.argv.includes('--bench')) ensureInstalled('bench', "the benchmark's baselines (bench/package.json)", full);
if (!process.argv.includes('--install-only')) ensureGenerated();
