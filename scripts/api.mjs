// The commands of a new API's project (npm run new-api writes them into its package.json): this framework's
// generator, server, token and conformance CLIs, run on the project in the working directory (its spec/,
// generated/, handlers/ and DATA_DIR). `start` generates first when the spec or the framework changed since.
// Plain Node: it registers the TypeScript loader (tsx) of this checkout, then runs the command in this process.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sourceHashes, sourceRecordFile } from './source-hash.mjs';

const framework = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const commands = {
  generate: 'generator/main.ts',
  start: 'server/project.ts',
  token: 'scripts/token.ts',
  conformance: 'scripts/conformance.ts',
  // The framework's TypeScript compiler, on the project's tsconfig.json (npm run new-api writes it).
  typecheck: 'node_modules/typescript/bin/tsc',
};
const usage = `usage: node node_modules/platform-api/scripts/api.mjs <command> [options]   (npm run <command> in a project)
Runs a command of the framework on the API project in the working directory (made by npm run new-api):
  generate      spec/ -> generated/
  start         serves the API (generating first when the spec or the framework changed)
  token         prints a token of the server in DATA_DIR (default ./data)
  conformance   checks a server of this API against the rules generated from spec/
  typecheck     checks handlers/ and generated/ (and the framework they import) with tsc
Each answers --help.`;

const [command, ...args] = process.argv.slice(2);
if (command === '--help' || command === '-h') {
  console.log(usage);
  process.exit(0);
}
if (!commands[command]) {
  console.error(`api: ${command === undefined ? 'no command' : `unknown command ${command}`}\n${usage}`);
  process.exit(2);
}

/** Why generated/ is not what the spec and the framework make now, or undefined when it is. */
function staleness() {
  const record = join('generated', sourceRecordFile);
  if (!existsSync(record)) return 'generated/ is missing';
  const recorded = JSON.parse(readFileSync(record, 'utf8'));
  const changed = Object.entries(sourceHashes('spec', framework(''))).filter(
    ([source, hash]) => recorded[source] !== hash,
  );
  return changed.length === 0 ? undefined : `${changed.map(([source]) => source).join(' and ')} changed`;
}

const tsx = import.meta.resolve('tsx');
const why = command === 'start' && !args.includes('--help') && !args.includes('-h') ? staleness() : undefined;
if (why) {
  // On stderr, as ensure-ready says what it does: stdout is the server's.
  console.error(`> ${why}: generating`);
  const generated = spawnSync(process.execPath, ['--import', tsx, framework(commands.generate)], {
    stdio: ['inherit', process.stderr, 'inherit'],
  });
  if (generated.status !== 0) process.exit(1);
}
if (command === 'typecheck') {
  // tsc and the @types are the framework's devDependencies, which its npm start does not install: added first.
  const ready = spawnSync(process.execPath, [framework('scripts/ensure-ready.mjs'), '--dev', '--install-only'], {
    cwd: framework(''),
    stdio: ['inherit', process.stderr, 'inherit'],
  });
  if (ready.status !== 0) process.exit(1);
  const checked = spawnSync(process.execPath, [framework(commands.typecheck), '-p', '.', ...args], {
    stdio: 'inherit',
  });
  process.exit(checked.status ?? 1);
}
const { register } = await import('tsx/esm/api');
register();
// The token's --identity is checked with the project's generated/, not this checkout's.
const own = command === 'token' ? ['--generated', 'generated'] : [];
process.argv = [process.argv[0], framework(commands[command]), ...own, ...args];
await import(pathToFileURL(framework(commands[command])).href);
