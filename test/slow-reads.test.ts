// Reads on a worker thread (runtime/storage/slow-reads.ts) when the database file cannot be opened (a data directory
// deleted under a running server): each read is answered UNAVAILABLE with RetryInfo, and the failed worker is not
// replaced in a loop (it was: a thread made and lost again and again, most of a core, for as long as the server ran).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../runtime/model/errors.js';
import { openSlowReads } from '../runtime/storage/slow-reads.js';
import { startWalCheckpoints } from '../runtime/storage/wal-checkpoints.js';

const failed = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

/** The process's CPU over a second stays near idle: a worker made and lost in a loop took most of a core. */
async function assertIdleForASecond(): Promise<void> {
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const used = process.cpuUsage(before);
  assert.ok(used.user + used.system < 300_000, `${used.user + used.system} µs of CPU in 1 s idle`);
}

test('a file that cannot be opened: reads are UNAVAILABLE with RetryInfo, the worker replaced only after a delay', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-api-slow-reads-'));
  rmSync(dir, { recursive: true });
  const reads = openSlowReads(join(dir, 'platform.sqlite'), { timeoutMs: 5000, queue: 8 });
  try {
    const first = await failed(reads.all('select 1'));
    assert.instance(first, ApiError);
    assert.is((first as ApiError).codeName, 'UNAVAILABLE');
    assert.ok(JSON.stringify((first as ApiError).details).includes('RetryInfo'));
    // Within the delay no worker is made: the read is refused at once, several at a time alike.
    const [a, b] = await Promise.all([failed(reads.all('select 2')), failed(reads.values('select 3'))]);
    for (const e of [a, b]) assert.is((e as ApiError).codeName, 'UNAVAILABLE');
    // While it waits, no thread is made and lost.
    await assertIdleForASecond();
  } finally {
    await reads.close();
  }
});

test('WAL checkpoints on a file that cannot be opened: the worker is replaced after a delay, not in a loop', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-api-checkpoints-'));
  rmSync(dir, { recursive: true });
  const checkpoints = startWalCheckpoints(join(dir, 'platform.sqlite'));
  try {
    // The first worker fails at once, its replacement a second later; the next comes two seconds after that.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await assertIdleForASecond();
  } finally {
    await checkpoints.close();
  }
});

test.run();
