// The typed client as a user gets it: generated/client packed with npm pack, installed offline into a project of
// its own under the temporary directory (no registry: the package depends on nothing), a program compiled there
// by tsc against the package's declarations alone (no @types/node) and run against a real server. A program with
// a filter value the spec does not declare, or an int64 of the wrong kind, does not compile.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { outcome } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

const tsc = resolve('node_modules/typescript/bin/tsc');
let s: TestServer;
let project: string;

/** A command run to completion; a failure fails the test with what it printed. */
function run(command: string, args: string[], cwd: string): string {
  const r = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_cache: join(project, '.npm') },
  });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** tsc in the project over one program: its diagnostics, empty when it compiles. */
function compile(name: string, program: string): string {
  writeFileSync(join(project, 'src', `${name}.ts`), program);
  const r = spawnSync(process.execPath, [tsc, '-p', '.'], { cwd: project, encoding: 'utf8' });
  rmSync(join(project, 'src', `${name}.ts`));
  return `${r.stdout}${r.stderr}`;
}

const header = `import { ApiCallError, createClient, type PlatformClient } from 'platform-api-client';
declare const process: { argv: string[] };
`;

test.before(async () => {
  s = await startTestServer();
  project = mkdtempSync(join(tmpdir(), 'client-package-'));
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', project, resolve('generated/client')], '.')
    .trim()
    .split('\n')
    .pop()!;
  mkdirSync(join(project, 'src'));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'uses-the-client', private: true, type: 'module' }),
  );
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', strict: true, outDir: 'dist', types: [] },
      include: ['src'],
    }),
  );
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(project, tarball)], project);
});
test.after(async () => {
  await s.stop();
  rmSync(project, { recursive: true, force: true });
});

test('the packed client has no dependencies and ships JavaScript with declarations', () => {
  const manifest = JSON.parse(readFileSync(join(project, 'node_modules/platform-api-client/package.json'), 'utf8'));
  assert.is(manifest.dependencies, undefined);
  for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/engine.js', 'dist/types.d.ts'])
    assert.ok(readFileSync(join(project, 'node_modules/platform-api-client', file), 'utf8').length > 0, file);
});

test('a program compiled against the installed package creates, gets and lists through a real server', async () => {
  const program = `${header}
const [, , baseUrl, token, org] = process.argv;
const api: PlatformClient = createClient({ baseUrl, token });
const made = await api.registry.createRepo({ parent: org, body: { name: 'from-the-package' } });
const got = await api.registry.getRepo({ uid: made.uid });
const page = await api.registry.listRepos({ 'uidp.children_of': org, name: 'from-the-package' });
const association = await api.iam.createAccountAssociation({
  parent: org,
  body: { name: 'a', github: { appInstallations: { app: { installations: [{ installationId: 12n }, { installationId: 13 }] } } } },
});
let dead = '';
try {
  await createClient({ baseUrl: 'http://127.0.0.1:1' }).ping.ping({});
} catch (e) {
  if (e instanceof ApiCallError) dead = [e.code, e.status, e.reason].join(' ');
  else throw e;
}
console.log(JSON.stringify({ name: got.name, listed: page.repos.map((r) => r.uid), made: made.uid, association, dead }));
`;
  assert.is(compile('main', program), '');
  const ran = await outcome(
    spawn(process.execPath, ['dist/main.js', s.url, s.token, await createOrg(s, 'package')], { cwd: project }),
  );
  assert.is(ran.status, 0, ran.stderr);
  const answer = JSON.parse(ran.stdout);
  assert.is(answer.name, 'from-the-package');
  assert.equal(answer.listed, [answer.made]);
  assert.equal(
    answer.association.github.appInstallations.app.installations.map(
      (i: { installationId: string }) => i.installationId,
    ),
    ['12', '13'],
  );
  assert.is(answer.dead, '14 0 UNAVAILABLE');
});

test('a filter value the spec does not declare, or an int64 of another kind, does not compile', () => {
  const purple = compile(
    'bad',
    `${header}
declare const api: PlatformClient;
await api.events.listDeliveries({ state: 'PURPLE' });
void ApiCallError;
`,
  );
  assert.match(purple, /src\/bad\.ts.*error TS2322: Type '"PURPLE"' is not assignable/);
  const int64 = compile(
    'bad',
    `${header}
declare const api: PlatformClient;
await api.iam.createAccountAssociation({ parent: '', body: { name: 'a', github: { appInstallations: { x: { installations: [{ installationId: true }] } } } } });
void ApiCallError;
`,
  );
  assert.match(int64, /error TS2322: Type 'boolean' is not assignable to type 'string \| number \| bigint'/);
  assert.is(
    compile(
      'good',
      `${header}
declare const api: PlatformClient;
await api.events.listDeliveries({ state: 'FAILED' });
await api.libraries.listArtifacts({ ecosystems: ['ECOSYSTEM_JAVA'] });
void ApiCallError;
`,
    ),
    '',
  );
});

test.run();
