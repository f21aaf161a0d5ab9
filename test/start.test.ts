// npm start's process: configuration errors, persistence across restarts, clean shutdown on SIGTERM.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exitOf, runScript, spawnServer } from './support/process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-start-'));
test.after(() => rmSync(dataDir, { recursive: true, force: true }));

test('bad configuration is refused with one clear line', async () => {
  for (const [env, message] of [
    [{ PORT: 'eighty' }, /PORT must be a number/],
    [{ PORT: '70000' }, /PORT must be a number from 0 to 65535/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must look like sqlite:.* or postgres:/],
    [{ DATABASE_URL: 'postgres://x' }, /DATABASE_URL must name a host and a database/],
    [{ LOG: 'loud' }, /LOG must be on or off/],
    [{ OUTBOUND_ALLOW_LOOPBACK: 'yes' }, /OUTBOUND_ALLOW_LOOPBACK must be on or off/],
    [{ EVENTS_ALLOW_PRIVATE_SINKS: 'on' }, /EVENTS_ALLOW_PRIVATE_SINKS is replaced by OUTBOUND_ALLOW_PRIVATE/],
  ] as const) {
    const r = await runScript('server/main.ts', [], { DATA_DIR: dataDir, ...env });
    assert.is(r.status, 1);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => !/npm warn/.test(l));
    assert.is(lines.length, 1, r.stderr);
    assert.match(lines[0], message);
  }
});

const env = { PORT: '0', DATA_DIR: dataDir, ISSUER_URL: 'http://issuer.test' };

test('data survives a restart and SIGTERM shuts down cleanly; npm run token works with or without the server', async () => {
  const first = await spawnServer(env);
  const minted = await runScript('scripts/token.ts', [], env);
  assert.is(minted.status, 0, minted.stderr);
  assert.match(minted.stdout, /^[\w-]+\.[\w-]+\.[\w-]+\n$/, 'stdout is the token alone');
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${minted.stdout.trim()}` };
  const org = await (
    await fetch(`${first.url}/iam/v2/groups`, { method: 'POST', headers, body: '{"name":"persist"}' })
  ).json();
  const repo = await (
    await fetch(`${first.url}/registry/v2/repos/${org.uid}`, { method: 'POST', headers, body: '{"name":"kept"}' })
  ).json();
  assert.ok(repo.uid, JSON.stringify(repo));
  first.child.kill('SIGTERM');
  assert.is(await exitOf(first.child), 0, first.output());
  assert.match(first.output(), /SIGTERM/);

  const offline = await runScript('scripts/token.ts', [], env);
  assert.is(offline.status, 0, offline.stderr);
  const second = await spawnServer(env);
  try {
    const got = await (
      await fetch(`${second.url}/registry/v2/repos/${repo.uid}`, {
        headers: { authorization: `Bearer ${offline.stdout.trim()}` },
      })
    ).json();
    assert.equal(got, repo);
  } finally {
    second.child.kill('SIGTERM');
    await exitOf(second.child);
  }
});

test('a token from npm run token is accepted by the server of its DATA_DIR on any port', async () => {
  const fresh = mkdtempSync(join(tmpdir(), 'platform-api-port-'));
  // No ISSUER_URL: the issuer is where the server listens, a port only it knows.
  const server = await spawnServer({ PORT: '0', DATA_DIR: fresh });
  try {
    assert.is.not(new URL(server.url).port, '8080');
    assert.equal(JSON.parse(readFileSync(join(fresh, 'issuer.json'), 'utf8')), {
      issuer: server.url,
      audience: server.url,
    });
    const minted = await runScript('scripts/token.ts', [], { DATA_DIR: fresh });
    assert.is(minted.status, 0, minted.stderr);
    const { organization } = JSON.parse(readFileSync(join(fresh, 'bootstrap.json'), 'utf8'));
    const res = await fetch(`${server.url}/registry/v2/repos?uidp.descendants_of=${organization}`, {
      headers: { authorization: `Bearer ${minted.stdout.trim()}` },
    });
    assert.is(res.status, 200, await res.text());
    const explicit = await runScript('scripts/token.ts', [], { DATA_DIR: fresh, ISSUER_URL: 'http://elsewhere.test' });
    const refused = await fetch(`${server.url}/registry/v2/repos?uidp.descendants_of=${organization}`, {
      headers: { authorization: `Bearer ${explicit.stdout.trim()}` },
    });
    assert.is(refused.status, 401, 'ISSUER_URL set for the token command wins over the record');
  } finally {
    server.child.kill('SIGTERM');
    await exitOf(server.child);
    rmSync(fresh, { recursive: true, force: true });
  }
});

test.run();
