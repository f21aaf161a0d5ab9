// A second API, made from an empty folder by the documented commands (docs/writing-a-spec.md, "Starting a new
// API"): npm run new-api -- DIR, then npm start in DIR. Its own spec (catalog: shelves and their books) is served
// over HTTP and gRPC by the framework without the Platform's spec or handlers, and passes its own conformance run.
// A spec that leaves out what the runtime needs is refused at generate, naming what to include.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RuleResult } from '../conformance/run.js';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { httpDefectProxy } from './support/defect-proxies.js';
import { grpcClient, type GrpcTestClient } from './support/grpc-client.js';
import { outcome, type ScriptResult } from './support/process.js';

const root = mkdtempSync(join(tmpdir(), 'platform-api-new-api-'));
const project = join(root, 'catalog-api');
const dataDir = join(root, 'data');
const env = {
  ...process.env,
  PORT: '0',
  DATA_DIR: dataDir,
  LOG: 'off',
  DRAIN_SECONDS: '0',
  OUTBOUND_ALLOW_LOOPBACK: 'on',
};
let server: ChildProcess | undefined;
let url = '';
let token = '';
let org = '';

/** A command as a user types it, in cwd. */
function run(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Promise<ScriptResult> {
  return outcome(spawn(command, args, { cwd, env: { ...env, ...extra } }));
}

/** npm start in the project, until it prints its listening line (it generates first). */
function start(): Promise<string> {
  // Its own process group: npm start runs the server as a grandchild, stopped with it.
  const child = spawn('npm', ['start'], { cwd: project, env, detached: true });
  server = child;
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the new API did not start: ${out}`)), 90_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the new API exited with ${code}: ${out}`));
    });
  });
}

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

test.before(async () => {
  const made = await run('npm', ['run', '-s', 'new-api', '--', project], process.cwd());
  assert.is(made.status, 0, made.stderr);
  url = await start();
  const printed = await run('npm', ['run', '-s', 'token'], project);
  assert.is(printed.status, 0, printed.stderr);
  token = printed.stdout.trim();
  org = readBootstrap(dataDir)!.organization;
});

test.after(async () => {
  if (server?.pid && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    process.kill(-server.pid, 'SIGTERM');
    await exited;
  }
  rmSync(root, { recursive: true, force: true });
});

test('the project holds its own spec, handlers and package.json, and none of the Platform', () => {
  const api = readFileSync(join(project, 'spec', 'api.yaml'), 'utf8');
  assert.match(api, /^include: \[iam, events, sts\]$/m);
  assert.match(readFileSync(join(project, 'spec', 'catalog.yaml'), 'utf8'), /collection: books/);
  const scripts = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).scripts;
  assert.equal(Object.keys(scripts).sort(), ['conformance', 'generate', 'start', 'token', 'typecheck']);
});

test('the project typechecks on its own: its generated code imports the runtime through its platform-api link', async () => {
  const routes = readFileSync(join(project, 'generated', 'routes.ts'), 'utf8');
  assert.match(routes, /from "platform-api\/runtime\/index\.js"/);
  const checked = await run('npm', ['run', '-s', 'typecheck'], project);
  assert.is(checked.status, 0, `${checked.stdout}\n${checked.stderr}`);
});

test("npm run token -- --identity UID checks the identity in the project's own tables", async () => {
  const owner = readBootstrap(dataDir)!.owner;
  const minted = await run('npm', ['run', '-s', 'token', '--', '--identity', owner], project);
  assert.is(minted.status, 0, minted.stderr);
  const headers = { authorization: `Bearer ${minted.stdout.trim()}` };
  assert.is((await fetch(`${url}/iam/v2/groups/${org}`, { headers })).status, 200);
  const unknown = await run('npm', ['run', '-s', 'token', '--', '--identity', `${org}/0123456789abcdef`], project);
  assert.is(unknown.status, 1);
  assert.match(unknown.stderr, /no identity/);
});

test('HTTP: shelves and their books, with a filter, an enum, an int64, a mask and a cascade', async () => {
  const shelf = await call('POST', `/catalog/v2/shelves/${org}`, { name: 'fiction' });
  assert.is(shelf.status, 200, JSON.stringify(shelf.body));
  const uid = shelf.body.uid;
  const big = '9007199254740993';
  const dune = await call('POST', `/catalog/v2/books/${uid}`, {
    title: 'Dune',
    format: 'FORMAT_PAPERBACK',
    pages: big,
  });
  assert.is(dune.status, 200, JSON.stringify(dune.body));
  assert.is(dune.body.pages, big, 'an int64 beyond a double is kept exactly');
  const slim = await call('POST', `/catalog/v2/books/${uid}`, { title: 'Odes', format: 'FORMAT_EBOOK', pages: 88 });
  assert.is(slim.body.pages, '88');
  const refused = await call('POST', `/catalog/v2/books/${uid}`, { title: 'x', format: 'FORMAT_SCROLL' });
  assert.is(refused.status, 400);
  assert.is(refused.body.code, 3);

  const masked = await call('PATCH', `/catalog/v2/books/${dune.body.uid}?update_mask=pages`, {
    pages: '612',
    title: 'ignored',
  });
  assert.is(masked.status, 200, JSON.stringify(masked.body));
  assert.is(masked.body.pages, '612');
  assert.is(masked.body.title, 'Dune', 'a field outside the mask is left alone');

  const paperbacks = await call('GET', `/catalog/v2/books?uidp.children_of=${uid}&format=FORMAT_PAPERBACK`);
  assert.equal(
    paperbacks.body.books.map((b: any) => b.title),
    ['Dune'],
  );
  const long = await call('GET', `/catalog/v2/books?uidp.children_of=${uid}&minPages=100&order_by=pages`);
  assert.equal(
    long.body.books.map((b: any) => b.title),
    ['Dune'],
  );
  assert.is((await call('GET', `/catalog/v2/books/${slim.body.uid}`)).body.title, 'Odes');

  assert.is((await call('DELETE', `/catalog/v2/shelves/${uid}`)).status, 200);
  assert.is((await call('GET', `/catalog/v2/books/${dune.body.uid}`)).status, 404, 'the books went with the shelf');
});

test("gRPC: the catalog's services, from the project's own protos, numbered by generate", async () => {
  // The template's spec writes no proto number: generate assigned them and recorded them beside the spec.
  const lock = JSON.parse(readFileSync(join(project, 'spec', 'proto.lock.json'), 'utf8'));
  assert.ok(JSON.stringify(lock).includes('example.catalog.v1.Book'), 'the project has its own proto lock');
  const grpc: GrpcTestClient = grpcClient(url, token, join(project, 'generated'), 'example');
  try {
    const shelf = await grpc.call('catalog.v1.ShelvesService', 'CreateShelf', {
      parent: org,
      shelf: { name: 'poetry' },
    });
    assert.is(shelf.code, 0, shelf.message);
    const book = await grpc.call('catalog.v1.BooksService', 'CreateBook', {
      parent: shelf.value.uid,
      book: { title: 'Odes', format: 'FORMAT_EBOOK', pages: '88' },
    });
    assert.is(book.code, 0, book.message);
    assert.is(book.value.pages, '88');
    const updated = await grpc.call('catalog.v1.BooksService', 'UpdateBook', {
      book: { uid: book.value.uid, pages: '90', title: 'ignored' },
      update_mask: { paths: ['pages'] },
    });
    assert.is(updated.code, 0, updated.message);
    assert.is(updated.value.pages, '90');
    assert.is(updated.value.title, 'Odes');
    const listed = await grpc.call('catalog.v1.BooksService', 'ListBooks', {
      uidp: { children_of: shelf.value.uid },
      format: 'FORMAT_EBOOK',
    });
    assert.equal(
      listed.value.books.map((b: any) => b.uid),
      [book.value.uid],
    );
    assert.is((await grpc.call('catalog.v1.BooksService', 'DeleteBook', { uid: book.value.uid })).code, 0);
    assert.is((await grpc.call('catalog.v1.BooksService', 'GetBook', { uid: book.value.uid })).code, 5);
  } finally {
    grpc.close();
  }
});

test("the framework's modules carry the project's names on the wire (api.yaml core), none of the reference's", async () => {
  const protoDir = join(project, 'generated', 'proto');
  const files = readdirSync(protoDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.proto'));
  assert.ok(files.includes(join('example', 'iam', 'v2', 'iam.proto')), files.join(' '));
  for (const f of files) assert.not.match(readFileSync(join(protoDir, f), 'utf8'), /chainguard/i, f);
  const model = readFileSync(join(project, 'generated', 'model.ts'), 'utf8');
  assert.match(model, /"dev\.example\.iam\.group\.created\.v1"/);
  assert.not.match(model, /chainguard/i);
  const grpc: GrpcTestClient = grpcClient(url, token, join(project, 'generated'), 'example');
  try {
    const groups = await grpc.call('iam.v2.GroupsService', 'ListGroups', {});
    assert.is(groups.code, 0, groups.message);
    assert.ok(groups.value.groups?.length >= 1, JSON.stringify(groups.value));
    // The token service in the project's package: served, asking for an upstream token.
    assert.is((await grpc.call('oidc.SecurityTokenService', 'Exchange', {}, '')).code, 16);
  } finally {
    grpc.close();
  }
});

test('only what the spec declares is served: no Platform domain, the token service as included', async () => {
  assert.is((await call('GET', '/registry/v2/repos')).status, 404);
  assert.is((await call('GET', '/ping/v2/ping')).status, 404);
  // Without the upstream token it asks for one: served, as api.yaml includes sts.
  assert.is((await fetch(`${url}/sts/exchange`, { method: 'POST' })).status, 401);
  const openapi = (await call('GET', '/openapi.json')).body;
  assert.ok(openapi.paths['/catalog/v2/books'], Object.keys(openapi.paths).join(' '));
  assert.not.ok(openapi.paths['/registry/v2/repos']);
});

test('its conformance run passes (npm run conformance in the project, over HTTP)', async () => {
  const json = join(root, 'report.json');
  const r = await run(
    'npm',
    ['run', '-s', 'conformance', '--', '--base-url', url, '--token-command', 'npm run -s token', '--json', json],
    project,
  );
  assert.is(r.status, 0, `${r.stdout.slice(-3000)}\n${r.stderr}`);
  assert.match(r.stdout, /^\d+ passed, 0 failed, \d+ skipped$/m);
  const results: RuleResult[] = JSON.parse(readFileSync(json, 'utf8')).results;
  const own = results.filter((x) => x.name.startsWith('catalog.books/') && x.status === 'passed');
  assert.ok(own.length > 10, `the rules of its own resources ran: ${own.length} passed`);
  // Its capability rules get their callers (all capabilities but one) from its own token exchange (include: sts).
  for (const rule of [
    'catalog.books/access/each-operation-needs-its-capability',
    'catalog.shelves/access/each-operation-needs-its-capability',
  ])
    assert.equal(
      results.find((x) => x.name === rule),
      { name: rule, status: 'passed' },
      rule,
    );
});

test('its conformance run fails an int64 answered as a JSON number (a double): the planted defect proves the rule', async () => {
  // The Platform has no int64 a create sets (conformance/defects.ts cannot plant this there): the example's pages is.
  const plan = JSON.parse(readFileSync(join(project, 'generated', 'conformance', 'plan.json'), 'utf8'));
  assert.equal(plan.resources.find((p: any) => p.collection === 'books').varied.pages.type, 'int64');
  const proxy = await httpDefectProxy(url, plan);
  proxy.plant({
    name: 'an int64 answered as a JSON number',
    breaks: 'declared',
    proves: ['catalog.books/create/returns-resource'],
    over: ['http'],
    answer: (a) =>
      a.status === 200 && typeof a.body?.pages === 'string'
        ? { ...a, body: { ...a.body, pages: Number(a.body.pages) } }
        : a,
  });
  const json = join(root, 'int64-report.json');
  try {
    const r = await run(
      'npm',
      ['run', '-s', 'conformance', '--', '--base-url', proxy.url, '--token-command', 'npm run -s token'].concat([
        '--filter',
        'catalog.books/create/returns-resource',
        '--json',
        json,
      ]),
      project,
    );
    assert.is(r.status, 1, r.stdout);
    const [result] = JSON.parse(readFileSync(json, 'utf8')).results as RuleResult[];
    assert.is(result.status, 'failed');
    // Sent as a string beyond 2^53, answered as a number that a double rounds.
    assert.match(result.expected!, /^pages echoed as sent \("\d{16,}"\)$/);
    assert.match(result.actual!, /^\d{16,}$/);
  } finally {
    await proxy.close();
  }
});

test('generate refuses a spec without the cores the runtime needs, naming what to include', async () => {
  const spec = join(root, 'variant');
  cpSync(join(project, 'spec'), spec, { recursive: true });
  const api = readFileSync(join(spec, 'api.yaml'), 'utf8');
  writeFileSync(join(spec, 'api.yaml'), api.replace('include: [iam, events, sts]', 'include: [sts]'));
  const r = await run(
    process.execPath,
    ['--import', 'tsx', 'generator/main.ts', '--spec', spec, '--out', join(root, 'out')],
    process.cwd(),
  );
  assert.is(r.status, 1);
  assert.match(
    r.stderr,
    /api\.yaml: \/include: the server needs the collections groups, identities, roles, roleBindings/,
  );
  assert.match(r.stderr, /include iam, the IAM core/);
  assert.match(r.stderr, /catalog\.yaml: \/resources\/0 declares an event.*include events/);
  assert.not.match(r.stderr, /TypeError|no resource has the collection/);
});

test("new-api refuses a file or a folder with files, and quotes a folder's name for the shell it is pasted into", async () => {
  const taken = join(root, 'taken');
  mkdirSync(taken);
  writeFileSync(join(taken, 'notes.txt'), 'mine');
  for (const dir of [join(taken, 'notes.txt'), taken]) {
    const r = await run('npm', ['run', '-s', 'new-api', '--', dir], process.cwd());
    assert.is(r.status, 2, r.stderr);
    assert.match(r.stderr, /^new-api: .* (is a file|is not empty): name a new or an empty folder\n$/);
  }
  assert.equal(readdirSync(taken), ['notes.txt'], 'nothing written beside them');
  assert.is(readFileSync(join(taken, 'notes.txt'), 'utf8'), 'mine');
  const odd = join(root, "it's $(touch pasted)");
  const made = await run('npm', ['run', '-s', 'new-api', '--', odd], process.cwd());
  assert.is(made.status, 0, made.stderr);
  const next = /^Next: (.*)$/m.exec(made.stdout)![1];
  const pasted = await run('bash', ['-c', `${next.replace('npm start', 'pwd')}`], root);
  assert.is(pasted.stdout.trim(), odd, 'the line pasted goes to the folder');
  assert.not.ok(existsSync(join(root, 'pasted')), 'and runs nothing of its name');
});

test('generate refuses include names that are no module of the framework (paths, names of every object)', async () => {
  const spec = join(root, 'includes');
  cpSync(join(project, 'spec'), spec, { recursive: true });
  const api = readFileSync(join(spec, 'api.yaml'), 'utf8');
  const odd = ['../../../etc/passwd', 'constructor', '__proto__', 'toString'];
  writeFileSync(
    join(spec, 'api.yaml'),
    api.replace(
      'include: [iam, events, sts]',
      `include: [iam, events, sts, ${odd.map((m) => JSON.stringify(m)).join(', ')}]`,
    ),
  );
  const r = await run(
    process.execPath,
    ['--import', 'tsx', 'generator/main.ts', '--spec', spec, '--out', join(root, 'out-includes')],
    process.cwd(),
  );
  assert.is(r.status, 1, r.stderr);
  odd.forEach((m, i) =>
    assert.ok(r.stderr.includes(`/include/${i + 3}: no framework module "${m}"`), `${m}: ${r.stderr}`),
  );
});

test('without include sts, the token service is not in the contract (and not served)', async () => {
  const spec = join(root, 'no-sts');
  cpSync(join(project, 'spec'), spec, { recursive: true });
  const api = readFileSync(join(spec, 'api.yaml'), 'utf8').replace(
    'include: [iam, events, sts]',
    'include: [iam, events]',
  );
  writeFileSync(join(spec, 'api.yaml'), api);
  const out = join(root, 'no-sts-out');
  const r = await run(
    process.execPath,
    ['--import', 'tsx', 'generator/main.ts', '--spec', spec, '--out', out],
    process.cwd(),
  );
  assert.is(r.status, 0, r.stderr);
  const openapi = JSON.parse(readFileSync(join(out, 'openapi.json'), 'utf8'));
  assert.not.ok(openapi.paths['/sts/exchange']);
  assert.ok(openapi.paths['/catalog/v2/shelves']);
  assert.match(readFileSync(join(out, 'model.ts'), 'utf8'), /"tokenExchange": false/);
  // Its conformance plan has no exchange: the capability rules fall back to --low-privilege-token (and say so).
  assert.not.ok(JSON.parse(readFileSync(join(out, 'conformance', 'plan.json'), 'utf8')).tokenExchange);
});

test.run();
