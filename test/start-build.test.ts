// npm start's command (scripts/start.mjs) on a copy of the project: it builds the server once, serves from the
// build (reads on the worker thread and generated/ included), and builds again when a source changes, so a
// changed source is never served from a stale build.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { exitOf, outcome } from './support/process.js';

// Inside the project, where node_modules resolves for the copy and for its build.
mkdirSync('.tmp', { recursive: true });
const project = mkdtempSync(join(process.cwd(), '.tmp', 'start-build-'));
test.after(() => rmSync(project, { recursive: true, force: true }));
for (const path of [
  'server',
  'runtime',
  'handlers',
  'framework',
  'generated',
  'scripts',
  'tsconfig.json',
  'package.json',
])
  cpSync(path, join(project, path), { recursive: true });
const dataDir = join(project, 'data');
const issuerUrl = 'http://start-build.test';

/** The processes whose parent is pid (Linux's /proc). */
function childrenOf(pid: number): string[] {
  const children: string[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      const [, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === pid) children.push(stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
    } catch {
      // Gone meanwhile.
    }
  }
  return children;
}

/**
 * One npm start (its command, as npm runs it) on the copy: what it printed on stderr, the ping's answer, and the
 * processes it left running beside the server.
 */
async function start(): Promise<{ stderr: string; pong: string; filteredList: number; children: string[] }> {
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: project,
    env: { ...process.env, PORT: '0', LOG: 'off', DATA_DIR: dataDir, ISSUER_URL: issuerUrl },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${stdout}${stderr}`)));
  });
  try {
    const { response: pong } = await (await fetch(`${url}/ping/v2/ping`)).json();
    const { organization, owner } = readBootstrap(dataDir)!;
    const issuer = await TokenIssuer.open(dataDir, issuerUrl, issuerUrl);
    // A filter: the read runs on the worker thread, whose file the build must still find.
    const list = await fetch(`${url}/registry/v2/repos?uidp.children_of=${organization}&name=nobody`, {
      headers: { authorization: `Bearer ${(await issuer.mint(owner)).token}` },
    });
    return { stderr, pong, filteredList: list.status, children: childrenOf(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await exitOf(child);
  }
}

test('the first start builds; an unchanged project starts from the build without building', async () => {
  const first = await start();
  assert.match(first.stderr, '> there is no build yet: building the server into .build/server/');
  assert.equal([first.pong, first.filteredList], ['pong', 200]);
  // The build's esbuild service is stopped once the bundle is written: it does not live on beside the server.
  assert.equal(first.children, []);
  const again = await start();
  assert.is(again.stderr, '', 'no build, nothing said');
  assert.is(again.pong, 'pong');
});

test('a changed handler, generated module or runtime file is built again before the server starts', async () => {
  const ping = join(project, 'handlers/ping.ts');
  writeFileSync(ping, readFileSync(ping, 'utf8').replace("'pong'", "'pong, rebuilt'"));
  const changed = await start();
  assert.match(changed.stderr, '> handlers/ping.ts changed since the last build: building the server');
  assert.is(changed.pong, 'pong, rebuilt');
  const model = join(project, 'generated/model.ts');
  writeFileSync(model, `${readFileSync(model, 'utf8')}\n// changed\n`);
  assert.match((await start()).stderr, '> generated/model.ts changed since the last build');
});

test('a build that is gone, or a source that does not compile, is never served', async () => {
  const { main } = JSON.parse(readFileSync(join(project, '.build/server/current.json'), 'utf8'));
  rmSync(join(project, '.build/server', main, '..'), { recursive: true });
  assert.match((await start()).stderr, '> the build is missing: building the server');
  const ping = join(project, 'handlers/ping.ts');
  writeFileSync(ping, `${readFileSync(ping, 'utf8')}\nexport const broken = ;\n`);
  const r = await outcome(spawn(process.execPath, ['scripts/start.mjs'], { cwd: project, env: process.env }));
  assert.is(r.status, 1);
  assert.match(r.stderr, 'platform-api: cannot build the server');
  assert.is(r.stdout, '', 'nothing served');
});

test.run();
