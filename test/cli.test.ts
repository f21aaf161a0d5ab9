// Every CLI's command line: --help and -h print the usage and exit 0, an unknown option is one line and exit 2
// before the CLI does anything, and a DATA_DIR that cannot be written stops a command with one line.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { settings } from '../runtime/operate/config.js';
import { runScript } from './support/process.js';

const scratch = mkdtempSync(join(tmpdir(), 'platform-api-cli-'));
test.after(() => rmSync(scratch, { recursive: true, force: true }));
const dataDir = join(scratch, 'data');

const clis: Record<string, string> = {
  generate: 'generator/main.ts',
  golden: 'scripts/tooling/golden.ts',
  start: 'server/main.ts',
  token: 'scripts/token.ts',
  import: 'scripts/import.ts',
  conformance: 'scripts/conformance.ts',
  bench: 'bench/bench.ts',
  'rotate-key': 'scripts/rotate-key.ts',
  migrate: 'scripts/migrate.ts',
  events: 'scripts/events.ts',
  'verify-group': 'scripts/verify-group.ts',
  grpc: 'scripts/grpc.ts',
  'new-api': 'scripts/new-api.ts',
};

/** stderr's lines without npm's own warnings about the machine's configuration */
const linesOf = (stderr: string) =>
  stderr
    .trim()
    .split('\n')
    .filter((l) => l !== '' && !/^npm warn/i.test(l));

test('--help and -h print the usage on stdout and exit 0', async () => {
  // -h for a few: every CLI reads its command line through the same scripts/cli-args.ts.
  const runs = [...Object.keys(clis).map((name) => [name, '--help']), ['token', '-h'], ['rotate-key', '-h']];
  await Promise.all(
    runs.map(async ([name, flag]) => {
      const script = clis[name];
      const r = await runScript(script, [flag], { DATA_DIR: dataDir });
      assert.is(r.status, 0, `${name} ${flag}: ${r.stderr}`);
      assert.match(r.stdout, /^usage: npm (start|run)/, `${name} ${flag}`);
      assert.is(linesOf(r.stderr).length, 0, `${name} ${flag}: ${r.stderr}`);
    }),
  );
  assert.not.ok(existsSync(dataDir), 'asking for help does nothing');
});

test('an unknown option is one line on stderr and exit 2, and nothing is done', async () => {
  await Promise.all(
    Object.entries(clis).map(async ([name, script]) => {
      const r = await runScript(script, ['--foo'], { DATA_DIR: dataDir });
      assert.is(r.status, 2, `${name}: ${r.stderr}`);
      assert.equal(linesOf(r.stderr), [`${name}: unknown option --foo; see --help`]);
      assert.is(r.stdout, '');
    }),
  );
  assert.not.ok(existsSync(dataDir), 'no command acted');
});

test('rotate-key acts on no argument it does not know', async () => {
  for (const args of [['now'], ['-x'], ['--keys=2'], ['--force']]) {
    const r = await runScript('scripts/rotate-key.ts', args, { DATA_DIR: dataDir });
    assert.is(r.status, 2, `${args}: ${r.stderr}`);
    assert.is(linesOf(r.stderr).length, 1, r.stderr);
    assert.match(r.stderr, /^rotate-key: .*; see --help\n$/);
  }
  assert.not.ok(existsSync(join(dataDir, 'signing-keys.json')), 'no key was made');
});

test('a malformed option names the problem in one line', async () => {
  const r = await runScript('scripts/token.ts', ['--identity'], { DATA_DIR: dataDir });
  assert.is(r.status, 2);
  assert.equal(linesOf(r.stderr), [`token: Option '--identity <value>' argument missing; see --help`]);
});

test('start --help names every variable runtime/operate/config.ts reads, from its settings table', async () => {
  const r = await runScript(clis.start, ['--help'], { DATA_DIR: dataDir });
  const listed = [...r.stdout.matchAll(/^ {2}([A-Z][A-Z0-9_]+) /gm)].map((m) => m[1]).filter((n) => n !== 'VARIABLE');
  assert.equal(
    listed,
    settings.map((s) => s.name),
  );
  // What the source reads: env.NAME, and the name given to a reader (wholeNumber(env, 'NAME', ...)).
  const source = readFileSync('runtime/operate/config.ts', 'utf8');
  const read = new Set([
    ...[...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]),
    ...[...source.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]),
  ]);
  assert.equal([...read].sort(), [...listed].sort());
});

test('through npm, after the pre-script, --help still answers and exits 0', () => {
  for (const script of ['start', 'generate']) {
    const r = spawnSync('npm', ['run', '-s', script, '--', '--help'], {
      encoding: 'utf8',
      env: { ...process.env, DATA_DIR: dataDir },
    });
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, /^usage: npm /, script);
  }
});

test('a DATA_DIR that cannot be written stops each command with one line naming it', async () => {
  // Under a regular file: refused even to root, whom permission bits do not stop.
  writeFileSync(join(scratch, 'a-file'), '');
  const bad = join(scratch, 'a-file', 'data');
  for (const [name, args] of [
    ['start', []],
    ['token', []],
    ['rotate-key', []],
    ['import', ['repos', 'samples/advisories.json']],
  ] as const) {
    const r = await runScript(clis[name], [...args], { DATA_DIR: bad });
    assert.is(r.status, 1, `${name}: ${r.stderr}`);
    const lines = linesOf(r.stderr);
    assert.is(lines.length, 1, `${name}: ${r.stderr}`);
    assert.match(lines[0], `DATA_DIR=${bad} is not writable: ENOTDIR`);
    assert.match(lines[0], /; set DATA_DIR to a writable directory$/);
  }
});

test.run();
