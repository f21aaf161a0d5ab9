// Secrets at rest: DATA_DIR and the files in it are the server's user's alone, and the key that seals stored
// credentials (SECRETS_KEY, or DATA_DIR's key file) is checked and rotates.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SecretSeal } from '../runtime/storage/secret-seal.js';
import { ConfigError, readConfig } from '../runtime/operate/config.js';
import { exitOf, spawnServer } from './support/process.js';

const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8);
const files = [
  'platform.sqlite',
  'platform.sqlite-wal',
  'platform.sqlite-shm',
  'signing-keys.json',
  'page-token.key',
  'secrets.key',
  'bootstrap.json',
  'issuer.json',
];

async function run(dataDir: string): Promise<{ stop(): Promise<void>; output(): string }> {
  const server = await spawnServer({ PORT: '0', DATA_DIR: dataDir });
  // The first request has the database written (its WAL exists from the first write on).
  await fetch(`${server.url}/healthz`);
  return {
    output: server.output,
    stop: async () => {
      const exit = exitOf(server.child);
      server.child.kill('SIGTERM');
      await exit;
    },
  };
}

test('a new DATA_DIR is 0700 and the database, its WAL and shared memory, the keys and bootstrap.json are 0600', async () => {
  const root = mkdtempSync(join(tmpdir(), 'platform-api-modes-'));
  const dataDir = join(root, 'new', 'data');
  try {
    const server = await run(dataDir);
    try {
      assert.is(modeOf(dataDir), '700');
      for (const file of files) {
        assert.ok(existsSync(join(dataDir, file)), `${file} exists`);
        assert.is(modeOf(join(dataDir, file)), '600', file);
      }
    } finally {
      await server.stop();
    }

    // A data directory from before (0755, its files 0644): the files are made 0600; the directory, the
    // operator's, is left as it is, with a warning.
    chmodSync(dataDir, 0o755);
    for (const file of files) if (existsSync(join(dataDir, file))) chmodSync(join(dataDir, file), 0o644);
    const again = await run(dataDir);
    try {
      for (const file of files)
        if (existsSync(join(dataDir, file))) assert.is(modeOf(join(dataDir, file)), '600', file);
      assert.is(modeOf(dataDir), '755');
      assert.match(again.output(), /warning: DATA_DIR=\S+ is mode 0755: others may list it/);
    } finally {
      await again.stop();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a DATA_DIR that cannot be made stops npm start at once with one line naming it (a recursive mkdir had spun)', async () => {
  for (const dataDir of ['/proc/platform-api-x', '/proc/self/platform-api/y', '/dev/null/x']) {
    const started = Date.now();
    const child = spawn(process.execPath, ['scripts/start.mjs'], {
      env: { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG: 'off' },
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await exitOf(child);
    clearTimeout(killer);
    assert.is(code, 1, `${dataDir}: ${stderr} (${Date.now() - started} ms)`);
    const lines = stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('platform-api'));
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0], new RegExp(`configuration error: DATA_DIR=${dataDir} is not writable: .*; set DATA_DIR`));
  }
});

test('SECRETS_KEY: keys of 32 bytes in base64; the first seals, every one unseals (rotation); a value names its key', () => {
  const [k1, k2] = [randomBytes(32), randomBytes(32)];
  const old = new SecretSeal([k1]);
  const sealed = old.seal('s3cret', 'oidc.clientSecret');
  assert.not.match(sealed, /s3cret/);
  assert.is.not(old.seal('s3cret', 'oidc.clientSecret'), sealed, 'a fresh nonce each time');
  const config = readConfig({ DATA_DIR: '/tmp/x', SECRETS_KEY: `${k2.toString('base64')},${k1.toString('base64')}` });
  const rotated = new SecretSeal(config.secretsKeys!);
  assert.is(rotated.unseal(sealed, 'oidc.clientSecret'), 's3cret');
  assert.is(rotated.unseal(rotated.seal('new', 'oidc.clientSecret'), 'oidc.clientSecret'), 'new');
  assert.throws(() => new SecretSeal([k2]).unseal(sealed, 'oidc.clientSecret'), /SECRETS_KEY does not hold/);
  // A value stored before sealing existed is read as it is.
  assert.is(rotated.unseal('plain', 'oidc.clientSecret'), 'plain');
  for (const bad of ['short', randomBytes(16).toString('base64'), `${k1.toString('base64')},`])
    assert.throws(
      () => readConfig({ DATA_DIR: '/tmp/x', SECRETS_KEY: bad }),
      (e: unknown) => e instanceof ConfigError && /^SECRETS_KEY must be keys of 32 bytes/.test(e.message),
      bad,
    );
});

test.run();
