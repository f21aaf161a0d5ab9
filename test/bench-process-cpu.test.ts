// npm run bench -- --engines --instance-cores F holds each server to F cores through a cgroup of its own: a busy
// process so held uses about that share, not the whole core it would take alone.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpuTicks, limitCpu, ticksPerSecond } from '../bench/process-cpu.js';
import { runScript } from './support/process.js';

const cpuSeconds = (pid: number) => cpuTicks(pid) / ticksPerSecond;

test('a busy process held to a quarter of a core uses about a quarter', async () => {
  const busy = spawn(process.execPath, ['-e', 'for (;;) {}']);
  try {
    limitCpu(busy.pid!, 0.25, 'test');
    await sleep(200);
    const [cpu0, t0] = [cpuSeconds(busy.pid!), performance.now()];
    await sleep(2000);
    const share = (cpuSeconds(busy.pid!) - cpu0) / ((performance.now() - t0) / 1000);
    // Alone it takes a whole core (1.0); held, 0.25 give or take the accounting's ticks and a busy machine.
    assert.ok(share > 0.05 && share < 0.4, `the held process used ${share.toFixed(2)} of a core`);
  } finally {
    // Gone before this process exits, so that its cgroup can be removed then.
    await new Promise((r) => {
      busy.once('exit', r);
      busy.kill('SIGKILL');
    });
  }
});

test('--instance-cores is refused, in one line, without --engines and out of range', async () => {
  for (const [args, message] of [
    [['--instance-cores', '0.5'], /^bench: --instance-cores goes with --engines$/],
    [['--engines', '--instance-cores', '0'], /^bench: --instance-cores takes the cores .*; got "0"$/],
    [['--engines', '--instance-cores', 'x'], /^bench: --instance-cores takes the cores .*; got "x"$/],
  ] as const) {
    const r = await runScript('bench/bench.ts', [...args], {});
    assert.is(r.status, 2, r.stderr);
    assert.match(r.stderr.trim(), message);
  }
});

test.run();
