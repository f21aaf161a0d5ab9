// The README's walk-through (its ```sh walkthrough blocks, in order, in one bash session) runs as written
// against a freshly started server on a port that is not 8080, with a fresh data directory.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exitOf, outcome, spawnServer, type ScriptResult } from './support/process.js';

const blocks = [...readFileSync('README.md', 'utf8').matchAll(/^```sh walkthrough\n([\s\S]*?)^```$/gm)].map(
  (m) => m[1],
);

function bash(script: string, env: Record<string, string>, timeoutMs: number): Promise<ScriptResult> {
  return outcome(spawn('bash', ['-c', script], { env: { ...process.env, ...env }, timeout: timeoutMs }));
}

test('the walk-through blocks are marked', () => {
  assert.ok(blocks.length >= 4, 'the token, events, conformance and import blocks');
  assert.not.match(blocks.join(''), /localhost:8080|127\.0\.0\.1:8080\//, 'no block assumes the default port');
});

test('the README walk-through runs as written on a fresh server on another port', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-readme-'));
  // As the README's events walk-through says to start it: its receiver is on this machine.
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, OUTBOUND_ALLOW_LOOPBACK: 'on' };
  // What the reader has not set: the README's commands must not rely on it.
  delete env.ISSUER_URL;
  delete env.TOKEN_AUDIENCE;
  const server = await spawnServer(env as Record<string, string>);
  try {
    const port = new URL(server.url).port;
    assert.is.not(port, '8080');
    // Each command must succeed (curl -f: every call answers 2xx); the trap names the one that did not.
    const script = `set -euo pipefail\ntrap 'echo "walk-through failed at: $BASH_COMMAND" >&2' ERR\n${blocks.join('\n')}`;
    const r = await bash(script, { PORT: port, DATA_DIR: dataDir }, 60_000);
    assert.is(r.status, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.match(r.stdout, /"name":\s*"hello"/, 'the repo made in the walk-through is listed');
    assert.match(r.stdout, /^\d+ passed, 0 failed, \d+ skipped$/m, 'the conformance suite passes');
    for (const collection of ['advisories', 'artifacts', 'artifactVersions', 'images', 'vulnReports']) {
      assert.match(r.stdout, new RegExp(`imported [1-9]\\d* ${collection}\\b`), r.stdout.slice(-3000));
    }
    assert.match(r.stdout, /"advisoryId":\s*"CGA-3f7q-m2xw-8hkd"/, 'the imported advisories are served');
    assert.match(
      r.stdout,
      /^dev\.chainguard\.api\.platform\.registry\.repo\.created\.v1 \S+ from webhook:/m,
      'delivered',
    );
  } finally {
    server.child.kill('SIGTERM');
    await exitOf(server.child);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
