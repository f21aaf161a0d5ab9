// server_state under attack (runtime/storage/server-state.ts): the signing keys, page-token secret, bootstrap and
// issuer rows that instances on one PostgreSQL database share, sealed with SECRETS_KEY. A server running from
// its build (as npm start), a row changed or deleted under it, instances with the wrong key, CLIs racing.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { readConfig } from '../runtime/operate/config.js';
import { SecretSeal } from '../runtime/storage/secret-seal.js';
import { startServer } from '../server/server.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { exitOf, runScript, spawnServer, type ServerProcess } from './support/process.js';

const key = randomBytes(32).toString('base64');
const dirs: string[] = [];
let databaseUrl: string;
let db: pg.Client;
let server: ServerProcess;
let token: string;
let org: string;

const newDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-api-state-'));
  dirs.push(dir);
  return dir;
};
const env = (more: Record<string, string> = {}) => ({ DATABASE_URL: databaseUrl, DATA_DIR: newDir(), ...more });

async function call(path: string, as: string) {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${as}` } });
  return { status: res.status, text: await res.text() };
}

/** A token of ours with another kid: well formed, signed, by a key no server has. */
function unknownKey(jwt: string): string {
  const [header, ...rest] = jwt.split('.');
  const h = { ...JSON.parse(Buffer.from(header, 'base64url').toString()), kid: '00112233aabbccdd' };
  return [Buffer.from(JSON.stringify(h)).toString('base64url'), ...rest].join('.');
}

const rows = async () =>
  new Map(
    (await db.query<{ name: string; value: string }>('select name, value from server_state')).rows.map((r) => [
      r.name,
      r.value,
    ]),
  );
const kids = async () =>
  (JSON.parse((await call('/.well-known/jwks.json', '')).text).keys as { kid: string }[]).map((k) => k.kid);
const keysLog = () =>
  server
    .output()
    .split('\n')
    .filter((line) => line.includes('"watch":"signing-keys"'));
const until = async (what: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 50 && !(await what()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
};

test.before(async () => {
  databaseUrl = await newDatabase();
  db = new pg.Client(databaseUrl);
  await db.connect();
  const dataDir = newDir();
  server = await spawnServer({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, SECRETS_KEY: key, LOG: 'on' });
  org = readBootstrap(dataDir)!.organization;
  const minted = await runScript('scripts/token.ts', [], env({ SECRETS_KEY: key }));
  assert.is(minted.status, 0, minted.stderr);
  token = minted.stdout.trim();
});
test.after(async () => {
  if (server) {
    const gone = exitOf(server.child);
    server.child.kill('SIGTERM');
    await gone;
  }
  await db?.end();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await stopOwnCluster();
});

test('with SECRETS_KEY every row is sealed, and no answer, error or /metrics carries the keys or the secret', async () => {
  const stored = await rows();
  assert.equal([...stored.keys()].sort(), ['bootstrap', 'issuer', 'page-token', 'signing-keys']);
  for (const [name, value] of stored) assert.ok(value.startsWith('sealed:v1:'), `${name} is sealed`);
  const seal = new SecretSeal([Buffer.from(key, 'base64')]);
  const secret = seal.unseal(stored.get('page-token')!, 'server_state.page-token');
  const [{ privateJwk }] = JSON.parse(seal.unseal(stored.get('signing-keys')!, 'server_state.signing-keys'));
  const answers = await Promise.all([
    call('/metrics', ''),
    call('/.well-known/jwks.json', ''),
    call('/.well-known/openid-configuration', ''),
    call(`/iam/v2/groups/${org}`, token),
    call(`/iam/v2/roles?page_size=1`, token),
    call(`/iam/v2/roles?page_size=1&page_token=forged.${'A'.repeat(43)}`, token),
    call(`/iam/v2/groups/${org}`, unknownKey(token)),
  ]);
  for (const { text } of answers) {
    assert.not.ok(text.includes(secret), 'the page-token secret');
    assert.not.ok(text.includes(privateJwk.d), 'the private key');
    assert.not.match(text, /"d":/);
  }
  assert.not.ok(server.output().includes(privateJwk.d) || server.output().includes(secret), 'nor the log');
});

test('an instance without SECRETS_KEY, or with another, stops at start with one line naming it', async () => {
  for (const given of [{}, { SECRETS_KEY: randomBytes(32).toString('base64') }] as Record<string, string>[]) {
    const r = await runScript('server/main.ts', [], env({ ...given, PORT: '0' }));
    assert.is(r.status, 1, r.stdout + r.stderr);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.includes('warning'));
    assert.is(lines.length, 1, r.stderr);
    assert.match(lines[0], /configuration error: SECRETS_KEY: the database's page-token /);
    assert.is(lines[0].match(/SECRETS_KEY/g)!.length, 2, lines[0]);
    assert.not.match(r.stdout, /listening/);
  }
});

test('keys changed or deleted under a running server: a token of an unknown key is 401, never 500; logged once per change', async () => {
  const forged = unknownKey(token);
  const sealed = (await rows()).get('signing-keys')!;
  const tampered = `${sealed.slice(0, -8)}AAAAAAAA`;
  const set = (value: string) =>
    db.query("update server_state set value = $1, version = version + 1 where name = 'signing-keys'", [value]);
  await set(tampered);
  await until(() => keysLog().length > 0);
  for (let i = 0; i < 3; i++) assert.is((await call(`/iam/v2/groups/${org}`, forged)).status, 401);
  assert.is((await call(`/iam/v2/groups/${org}`, token)).status, 200, 'tokens of the keys read before still verify');
  await db.query("delete from server_state where name = 'signing-keys'");
  await until(() => keysLog().length > 1);
  assert.is((await call(`/iam/v2/groups/${org}`, forged)).status, 401);
  await new Promise((resolve) => setTimeout(resolve, 600));
  await db.query("insert into server_state values ('signing-keys', $1, 9, 'now')", [sealed]);
  await until(() => keysLog().length > 2);
  const lines = keysLog();
  assert.is(lines.length, 3, lines.join('\n'));
  assert.match(lines[0], /"level":"error".*cannot be unsealed/);
  assert.match(lines[1], /"level":"error".*holds no signing-keys/);
  assert.match(lines[2], /"level":"info".*read again/);
  assert.not.match(server.output(), /"status":500/);
});

test('npm run rotate-key twice at once: both new keys are kept and published', async () => {
  const before = await kids();
  const runs = await Promise.all([0, 1].map(() => runScript('scripts/rotate-key.ts', [], env({ SECRETS_KEY: key }))));
  const added = runs.map((r) => {
    assert.is(r.status, 0, r.stderr);
    return /new signing key ([0-9a-f]+)/.exec(r.stdout)![1];
  });
  await until(async () => (await kids()).length === before.length + 2);
  assert.equal((await kids()).slice(-2).sort(), added.sort());
});

test('values stored plain before SECRETS_KEY was set are sealed at the first start with it; a secret of no length is refused', async () => {
  const url = await newDatabase();
  const plain = await startServer(readConfig({ PORT: '0', LOG: 'off', DATABASE_URL: url, DATA_DIR: newDir() }));
  await plain.close();
  const other = new pg.Client(url);
  await other.connect();
  try {
    const values = async () => (await other.query<{ value: string }>('select value from server_state')).rows;
    assert.ok((await values()).every((r) => !r.value.startsWith('sealed:')));
    const config = readConfig({ PORT: '0', LOG: 'off', DATABASE_URL: url, DATA_DIR: newDir(), SECRETS_KEY: key });
    await (await startServer(config)).close();
    assert.ok(
      (await values()).every((r) => r.value.startsWith('sealed:v1:')),
      'every row sealed',
    );
    // A page-token secret that is not 64 hex digits would be a short HMAC key, or none: refused at start.
    await other.query("update server_state set value = 'not hex' where name = 'page-token'");
    await startServer(config).then(
      () => assert.unreachable('started with a page-token secret that is not one'),
      (e: Error) => assert.match(e.message, /page-token is not 64 hex digits/),
    );
  } finally {
    await other.end();
  }
});

test.run();
