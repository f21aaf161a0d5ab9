// npm test's runner (scripts/tooling/test.mjs) on a scratch test directory: uvu's summary plus the "Failed: N" line.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

// Inside the project, where the scratch tests resolve uvu.
mkdirSync('.tmp', { recursive: true });
const scratch = relative('.', mkdtempSync(join('.tmp', 'runner-')));
test.after(() => rmSync(scratch, { recursive: true, force: true }));

const suite = (tests: string) =>
  `import { test } from 'uvu';\nimport * as assert from 'uvu/assert';\n${tests}\ntest.run();\n`;
writeFileSync(
  join(scratch, 'a.test.ts'),
  suite(`test('passes', () => assert.ok(true));\ntest('fails', () => assert.is(1, 2));`),
);
writeFileSync(
  join(scratch, 'c.test.ts'),
  suite(`test('passes but leaves a timer', () => { setInterval(() => {}, 1000); assert.ok(true); });`),
);
writeFileSync(
  join(scratch, 'b.test.ts'),
  suite(`test('passes too', () => assert.ok(true));\ntest.skip('skipped', () => {});`),
);

const run = (pattern: string, env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['scripts/tooling/test.mjs', scratch, pattern], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });

test('a failing run ends with the counts, a Failed line, and exit 1', () => {
  const r = run('[ab]\\.test\\.ts$');
  assert.is(r.status, 1, r.stderr);
  assert.match(r.stdout, /^\s*Total:\s+3$/m);
  assert.match(r.stdout, /^\s*Passed:\s+2$/m);
  assert.match(r.stdout, /^\s*Skipped:\s+1$/m);
  assert.match(r.stdout, /^\s*Failed:\s+1$/m);
});

test('a passing run says Failed: 0 and exits 0', () => {
  const r = run('b\\.test\\.ts$');
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^\s*Failed:\s+0$/m);
});

test('a run whose tests pass but leave the process alive is ended and fails, saying why', () => {
  const r = run('c\\.test\\.ts$', { TEST_LINGER_MS: '1000' });
  assert.is(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^\s*Passed:\s+1$/m);
  assert.match(r.stderr, /kept the run alive 1 s after uvu's summary/);
});

test('a run whose tests pass but leave the process alive is ended and fails, saying why', () => {
  const r = run('c\\.test\\.ts$', { TEST_LINGER_MS: '1000' });
  assert.is(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /^\s*Passed:\s+1$/m);
  assert.match(r.stderr, /kept the run alive 1 s after uvu's summary/);
});

test.run();
