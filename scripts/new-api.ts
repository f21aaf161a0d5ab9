// npm run new-api -- DIR: makes a new API project in DIR, with a minimal spec of its own, served by this framework.
import { cpSync, existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from './cli-args.js';

const { positionals } = parseCommandLine({
  name: 'new-api',
  usage: `
usage: npm run new-api -- DIR
Makes a new API project in DIR (created, or an empty folder): a folder of its own beside this framework, which
it uses from this checkout rather than copying it.
  spec/api.yaml        the API: its title and service, and the framework modules it includes (iam, events, sts)
  spec/catalog.yaml    one small domain to rename and grow: shelves, and the books on each
  handlers/index.ts    its hand-written behaviour (none yet beside the framework's own)
  package.json         npm start, npm run generate, npm run token, npm run conformance, npm run typecheck:
                       this framework's commands run on the project (node_modules/platform-api/scripts/api.mjs)
  tsconfig.json        what npm run typecheck checks: handlers/ and generated/, with the framework's runtime
  node_modules/        links into this checkout: the framework, and the packages generated code imports
Then: cd DIR && npm start (generates generated/ from spec/ first). See docs/writing-a-spec.md, "Starting a new API".`,
  allowPositionals: true,
});

const framework = fileURLToPath(new URL('..', import.meta.url));
// npm runs scripts in the package's root: DIR is as the caller typed it, from where they typed it.
const dir = positionals.length === 1 ? resolve(process.env.INIT_CWD ?? '.', positionals[0]) : undefined;
if (!dir) {
  process.stderr.write('new-api: name one folder to make the project in (npm run new-api -- DIR); see --help\n');
  process.exit(2);
}
if (existsSync(dir) && !statSync(dir).isDirectory()) {
  process.stderr.write(`new-api: ${dir} is a file: name a new or an empty folder\n`);
  process.exit(2);
}
if (existsSync(dir) && readdirSync(dir).length > 0) {
  process.stderr.write(`new-api: ${dir} is not empty: name a new or an empty folder\n`);
  process.exit(2);
}

/** The packages generated code imports by name (entity schemas, validators): the framework's own copies. */
const importedByGenerated = ['@mikro-orm/core', 'ajv', 'ajv-formats'];
const toFramework = relative(dir, framework) || '.';
const name =
  basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'api';
const command = (c: string) => `node node_modules/platform-api/scripts/api.mjs ${c}`;
const packageJson = {
  name,
  version: '0.1.0',
  private: true,
  type: 'module',
  description: `An API made with npm run new-api: its spec in spec/, served by the framework in ${toFramework}`,
  scripts: Object.fromEntries(['generate', 'start', 'token', 'conformance', 'typecheck'].map((c) => [c, command(c)])),
  // file: links, as npm install would make them: the framework and its copies of what generated code imports.
  dependencies: Object.fromEntries([
    ['platform-api', `file:${toFramework}`],
    ...importedByGenerated.map((p) => [p, `file:${join(toFramework, 'node_modules', p)}`]),
  ]),
};
// Its handlers and generated code checked as the framework checks its own; the framework's sources, reached
// through node_modules/platform-api, are checked with them (its @types are the framework's).
const tsconfig = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    esModuleInterop: true,
    skipLibCheck: true,
    resolveJsonModule: true,
    typeRoots: ['node_modules/platform-api/node_modules/@types'],
    types: ['node'],
  },
  include: ['handlers', 'generated'],
};
const handlers = `// The API's hand-written behaviour, by domain, checked against the interfaces generated from spec/
// (generated/routes.ts). The framework's modules bring their own (coreHandlers: role bindings shown hydrated,
// subscriptions' sinks checked, deliveries redriven); a domain of this API needs an entry here once its spec
// declares an endpoint, an onCreate or a presenter, and generate says so.
import { coreHandlers } from 'platform-api/framework/handlers/index.js';
import type { Handlers } from '../generated/routes.js';

export const handlers: Handlers = { ...coreHandlers };
`;

mkdirSync(join(dir, 'handlers'), { recursive: true });
cpSync(join(framework, 'framework', 'template', 'spec'), join(dir, 'spec'), { recursive: true });
writeFileSync(join(dir, 'handlers', 'index.ts'), handlers);
writeFileSync(join(dir, 'package.json'), `${JSON.stringify(packageJson, null, 2)}\n`);
writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
writeFileSync(join(dir, '.gitignore'), 'node_modules/\ngenerated/\ndata/\n');
for (const p of ['platform-api', ...importedByGenerated]) {
  const link = join(dir, 'node_modules', p);
  mkdirSync(join(link, '..'), { recursive: true });
  const target = p === 'platform-api' ? framework : join(framework, 'node_modules', p);
  symlinkSync(relative(join(link, '..'), target) || '.', link, 'dir');
}
const shown = relative(process.env.INIT_CWD ?? '.', dir).startsWith('..')
  ? dir
  : relative(process.env.INIT_CWD ?? '.', dir);
console.log(`made the API project ${shown}:`);
for (const f of [
  'spec/api.yaml',
  'spec/catalog.yaml',
  'handlers/index.ts',
  'package.json',
  'tsconfig.json',
  '.gitignore',
])
  console.log(`  ${join(shown, f)}`);
// Quoted for a shell when it needs to be: the line is meant to be pasted, and a folder's name may hold anything.
const pasted = /^[\w./-]+$/.test(shown) ? shown : `'${shown.replaceAll("'", `'\\''`)}'`;
console.log(`Next: cd ${pasted} && npm start`);
