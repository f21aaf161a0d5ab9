// Runs before npm start and npm test: installs dependencies and regenerates generated/ when they are
// missing or older than what they come from, saying what it does. Plain Node: it runs before any install.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : 0);
const newest = (dir) => {
  if (!existsSync(dir)) return 0;
  let max = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    max = Math.max(max, e.isDirectory() ? newest(join(dir, e.name)) : mtime(join(dir, e.name)));
  }
  return max;
};
const run = (why, command) => {
  console.log(`> ${why}: ${command}`);
  try {
    execSync(command, { stdio: 'inherit' });
  } catch {
    console.error(`'${command}' failed; fix the error above and run it again`);
    process.exit(1);
  }
};

const installed = mtime('node_modules/.package-lock.json');
if (installed === 0) run('dependencies are not installed', 'npm ci --no-audit --no-fund');
else if (mtime('package-lock.json') > installed) run('package-lock.json changed since the last install', 'npm ci --no-audit --no-fund');

const generated = mtime('generated/model.ts');
if (generated === 0) run('generated/ is missing', 'npm run -s generate');
else if (Math.max(newest('spec'), newest('generator'), mtime('runtime/model.ts')) > generated) run('spec/ or generator/ changed', 'npm run -s generate');
