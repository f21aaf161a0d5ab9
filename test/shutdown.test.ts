// A graceful stop as orchestrators expect it: on SIGTERM /readyz turns 503 at once while the port still takes and
// answers requests for DRAIN_SECONDS; then it closes, finishes what is in flight and exits 0.
import { get as httpGet } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exitOf, spawnServer } from './support/process.js';

/** One request on a connection of its own: its status and connection header, or the error that ended it. */
function request(url: string): Promise<{ status?: number; connection?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = httpGet(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
  });
}

test('SIGTERM: /readyz 503 at once, a burst of new connections across the signal all answered, none reset; exit 0', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-drain-'));
  const server = await spawnServer({ PORT: '0', DATA_DIR: dataDir, DRAIN_SECONDS: '2', LOG: 'on' });
  try {
    assert.is((await request(`${server.url}/readyz`)).status, 200);
    const burst = (n: number) => Array.from({ length: n }, () => request(`${server.url}/ping/v2/ping`));
    const before = burst(100);
    server.child.kill('SIGTERM');
    const after = burst(100);
    const outcomes = await Promise.all([...before, ...after]);
    const failed = outcomes.filter((o) => o.status !== 200);
    assert.equal(failed, [], `${failed.length} of 200 requests across the signal not answered 200`);
    const ready = await request(`${server.url}/readyz`);
    assert.is(ready.status, 503, 'not ready while draining: the load balancer stops sending');
    const late = await request(`${server.url}/ping/v2/ping`);
    assert.is(late.status, 200, 'still answered during the drain');
    assert.is(late.connection, 'close', 'an answer during the drain closes its connection: none is left idle to cut');
    assert.is(await exitOf(server.child), 0, server.output());
    assert.match(server.output(), /SIGTERM: draining for 2 s/);
  } finally {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
