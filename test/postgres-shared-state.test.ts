// What instances on one PostgreSQL database share besides the records, kept in the database
// (runtime/storage/server-state.ts): signing keys, the page-token secret, the first start's owner. Two instances,
// each with a DATA_DIR of its own, started at once on a new database, and the CLIs given DATABASE_URL alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig } from '../runtime/operate/config.js';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { startServer, type RunningServer } from '../server/server.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { runScript } from './support/process.js';

const issuerUrl = 'http://platform.test';
let databaseUrl: string;
const dirs: string[] = [];
let a: RunningServer;
let b: RunningServer;
let token: string;
let org: string;

const newDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-api-shared-'));
  dirs.push(dir);
  return dir;
};

function instance(): Promise<RunningServer> {
  const env = { PORT: '0', HOST: '127.0.0.1', LOG: 'off', DATABASE_URL: databaseUrl, ISSUER_URL: issuerUrl };
  return startServer(readConfig({ ...env, DATA_DIR: newDir() }));
}

async function call(s: RunningServer, path: string, as = token) {
  const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${as}` } });
  return { status: res.status, body: (await res.json()) as any };
}

const kids = async (s: RunningServer) =>
  ((await call(s, '/.well-known/jwks.json', '')).body.keys as { kid: string }[]).map((k) => k.kid);
const kidOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString()).kid as string;

test.before(async () => {
  databaseUrl = await newDatabase();
  // Started at once on a new database: one of them makes the keys, the secret and the organization.
  [a, b] = await Promise.all([instance(), instance()]);
  const [bootA, bootB] = dirs.map((d) => readBootstrap(d)!);
  assert.equal(bootA, bootB, 'both instances know the one owner');
  org = bootA.organization;
  token = (await a.issuer.mint(bootA.owner)).token;
});
test.after(async () => {
  await Promise.all([a?.close(), b?.close()]);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await stopOwnCluster();
});

test('instances started at once on a new database share one key set and one organization', async () => {
  assert.equal(await kids(a), await kids(b));
  assert.is((await kids(a)).length, 1);
  const client = new pg.Client(databaseUrl);
  await client.connect();
  try {
    const { rows } = await client.query(
      "select count(*)::int as n from groups where description = 'Created on first start'",
    );
    assert.is(rows[0].n, 1, 'one organization made on first start');
  } finally {
    await client.end();
  }
});

test("each instance accepts the other's tokens and continues the other's page tokens", async () => {
  const fromB = (await b.issuer.mint(readBootstrap(dirs[1])!.owner)).token;
  assert.is((await call(a, `/iam/v2/groups/${org}`, fromB)).status, 200);
  assert.is((await call(b, `/iam/v2/groups/${org}`)).status, 200);
  const first = await call(a, '/iam/v2/roles?page_size=2');
  assert.is(first.status, 200, JSON.stringify(first.body));
  assert.ok(first.body.nextPageToken, 'a second page');
  const next = await call(b, `/iam/v2/roles?page_size=2&page_token=${first.body.nextPageToken}`);
  assert.is(next.status, 200, JSON.stringify(next.body));
  assert.ok(next.body.roles.length > 0);
  assert.not.equal(next.body.roles[0].uid, first.body.roles[0].uid, 'the page continues');
});

test('npm run token with DATABASE_URL alone mints a token both instances accept', async () => {
  const r = await runScript('scripts/token.ts', [], { DATABASE_URL: databaseUrl, DATA_DIR: newDir() });
  assert.is(r.status, 0, r.stderr);
  const minted = r.stdout.trim();
  for (const s of [a, b]) assert.is((await call(s, `/iam/v2/groups/${org}`, minted)).status, 200);
});

test('npm run rotate-key against the database is seen by both instances; old tokens still verify', async () => {
  const old = token;
  const before = await kids(a);
  const r = await runScript('scripts/rotate-key.ts', [], { DATABASE_URL: databaseUrl, DATA_DIR: newDir() });
  assert.is(r.status, 0, r.stderr);
  const kid = /new signing key ([0-9a-f]+)/.exec(r.stdout)![1];
  const deadline = Date.now() + 1000;
  const seen = async () =>
    (await kids(a)).includes(kid) &&
    (await kids(b)).includes(kid) &&
    kidOf((await a.issuer.mint(org)).token) === kid &&
    kidOf((await b.issuer.mint(org)).token) === kid;
  let both = await seen();
  while (!both && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    both = await seen();
  }
  assert.ok(both, 'both instances publish and sign with the new key a second after the rotation');
  assert.equal(await kids(b), [...before, kid], 'the old key is still published');
  for (const s of [a, b]) assert.is((await call(s, `/iam/v2/groups/${org}`, old)).status, 200, 'an old token');
  const fresh = (await a.issuer.mint(readBootstrap(dirs[0])!.owner)).token;
  assert.is((await call(b, `/iam/v2/groups/${org}`, fresh)).status, 200, 'a new token on the other instance');
});

test.run();
