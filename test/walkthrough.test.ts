// The walk-through: every ```sh walkthrough block of README.md and docs/, in the order of `walkthrough` below, in
// one bash session, runs as written against a freshly started server on a port that is not 8080, with a fresh data
// directory. A page's blocks go on from the ones before (API, TOKEN, ORG set by the README's).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { blocksOf, docPages } from './support/doc-pages.js';
import { exitOf, outcome, spawnServer, type ScriptResult } from './support/process.js';

/** The pages whose blocks the walk-through runs, in this order. */
const walkthrough = [
  'README.md',
  'docs/getting-started.md',
  'docs/events.md',
  'docs/conformance.md',
  'docs/operating.md',
];
const blocks = walkthrough.flatMap((page) => blocksOf(page).filter((b) => b.info === 'sh walkthrough'));

function bash(script: string, env: Record<string, string>, timeoutMs: number): Promise<ScriptResult> {
  return outcome(spawn('bash', ['-c', script], { env: { ...process.env, ...env }, timeout: timeoutMs }));
}

test('the walk-through blocks are marked, on the pages it runs', () => {
  for (const page of walkthrough)
    assert.ok(
      blocksOf(page).some((b) => b.info === 'sh walkthrough'),
      `${page} has a walkthrough block`,
    );
  for (const page of docPages())
    if (blocksOf(page).some((b) => b.info === 'sh walkthrough'))
      assert.ok(walkthrough.includes(page), `${page}'s walkthrough blocks run: add the page to walkthrough`);
  const text = blocks.map((b) => b.body).join('');
  assert.not.match(text, /localhost:8080|127\.0\.0\.1:8080\//, 'no block assumes the default port');
});

test('the walk-through runs as written on a fresh server on another port', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-walkthrough-'));
  // As docs/events.md says to start it: its receiver is on this machine.
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, OUTBOUND_ALLOW_LOOPBACK: 'on' };
  // What the reader has not set: the walk-through's commands must not rely on it.
  delete env.ISSUER_URL;
  delete env.TOKEN_AUDIENCE;
  const server = await spawnServer(env as Record<string, string>);
  try {
    const port = new URL(server.url).port;
    assert.is.not(port, '8080');
    // Each command must succeed (curl -f: every call answers 2xx); the trap names the one that did not.
    const script = `set -euo pipefail\ntrap 'echo "walk-through failed at: $BASH_COMMAND" >&2' ERR\n${blocks.map((b) => b.body).join('\n')}`;
    const r = await bash(script, { PORT: port, DATA_DIR: dataDir }, 300_000);
    assert.is(r.status, 0, `${r.stderr}\n${r.stdout.slice(-2000)}`);
    assert.match(r.stdout, /"name":\s*"hello"/, 'the repo made in the walk-through is listed');
    assert.match(r.stdout, /"name":\s*"owner"/, "a token of --identity reads the owner's identity");
    assert.match(r.stdout, /^\d+ spec statements: \d+ checked, 0 gaps, \d+ not observable$/m, 'the coverage');
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
