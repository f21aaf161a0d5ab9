// npm test [-- DIR [PATTERN]]: runs the uvu tests and adds the line uvu's summary lacks, "Failed: N".
// uvu counts skipped tests outside Total, so failed = Total - Passed. A run whose counts show a failure
// exits 1 even when uvu would exit 0 (it does when a before hook throws).
// One throwaway PostgreSQL serves the run's PostgreSQL tests (scripts/tooling/postgres-cluster.mjs: installed if missing,
// started on a free port, stopped at the end); the tests fail rather than skip when it cannot start.
// The whole run (no DIR given) has two passes: every test on SQLite, then the end-to-end tests again with every
// test server on a PostgreSQL database of its own (TEST_ENGINE=postgresql), then a handful of them through HAProxy
// in front of three instances on one database (TEST_TOPOLOGY=haproxy); the counts are the passes' sum.
import { spawn } from 'node:child_process';
import { startCluster } from './postgres-cluster.mjs';
import { ensureHaproxy } from './haproxy.mjs';

const whole = process.argv.length <= 2;
const args = whole ? ['test', '\\.test\\.ts$'] : process.argv.slice(2);
/**
 * The end-to-end tests whose servers go to PostgreSQL in the second pass. The others need no database (the
 * generator, the contract, the command lines), are about SQLite itself (schema-state, table, write-lock), are
 * PostgreSQL's own (postgres), or run `npm start` or a spawned server in a data directory as a user would (walkthrough,
 * start, start-build, fuzz).
 */
const onBothEngines = [
  'access',
  'api',
  'batch',
  'behaviours',
  'capabilities',
  'client',
  'concurrency',
  'conformance',
  'conformance-grpc',
  'escalation',
  'events',
  'exchange',
  'grpc',
  'grpc-fuzz',
  'grpc-reference-client',
  'grpc-v1-reference-client',
  'provider-calls',
  'proto-numbers',
  'provider-flow',
  'group-access',
  'import',
  'int64',
  'operations',
  'pipeline',
  'read-limits',
  'requests',
  'robustness',
  'schema-evolution',
  'scim',
  'tokens',
  'total-count',
  'v1',
  'v1-calls',
];
/**
 * The end-to-end tests run a third time, each test server being three instances on one PostgreSQL database behind
 * HAProxy, balancing every request (test/support/balanced.ts): the HTTP and gRPC surfaces, the provider's flow and
 * events, and balanced's own check that the requests reached all three. A few files: each server is four processes.
 */
const throughHaproxy = ['api', 'balanced', 'events', 'grpc', 'provider-flow', 'v1'];
let cluster;
try {
  cluster = await startCluster();
  process.stderr.write(`[test] PostgreSQL for the tests at ${cluster.base}\n`);
} catch (e) {
  process.stderr.write(`[test] cannot start PostgreSQL: ${e.message}; the PostgreSQL tests will fail\n`);
}
/**
 * The tests' environment: the test cluster, and never a DATABASE_URL of the shell's (the servers and scripts the
 * tests start must not write into a database someone exported for other work).
 */
function testEnv(extra = {}) {
  const env = { ...process.env, ...(cluster ? { TEST_POSTGRES_URL: `${cluster.base}/postgres` } : {}), ...extra };
  delete env.DATABASE_URL;
  return env;
}

let running;
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    running?.kill(signal);
    void cluster?.stop().finally(() => process.exit(1));
  });

// Once uvu has printed its summary the process ends at once, unless a test left a handle open (a connection,
// a timer): then it would never end. Waited for briefly (TEST_LINGER_MS, default 30 s), then ended and the run
// failed, naming the cause.
const lingerMs = Number(process.env.TEST_LINGER_MS) || 30_000;

/** One uvu run; resolves to its counts, or to why it has none. */
function pass(uvuArgs, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'node_modules/uvu/bin.js', ...uvuArgs, '--no-color'], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env,
    });
    running = child;
    let output = '';
    let lingered = false;
    let lingering;
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      output += chunk;
      if (!lingering && /^\s*Duration:/m.test(output))
        lingering = setTimeout(() => {
          lingered = true;
          child.kill('SIGKILL');
        }, lingerMs).unref();
    });
    child.on('close', (code, signal) => {
      clearTimeout(lingering);
      const count = (label) => {
        const all = [...output.matchAll(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'gm'))];
        return all.length ? Number(all[all.length - 1][1]) : undefined;
      };
      const total = count('Total');
      const passed = count('Passed');
      if (lingered)
        resolve({
          total,
          passed,
          problem:
            `the tests finished, but something a test opened (a connection, a server, a timer) kept the run alive ` +
            `${lingerMs / 1000} s after uvu's summary: the run fails until it is closed`,
        });
      else if (total === undefined || passed === undefined)
        resolve({
          problem: `the test run ended without uvu's summary (${signal ? `signal ${signal}` : `exit status ${code}`})`,
        });
      else resolve({ total, passed, code });
    });
  });
}

const passes = [await pass(args, testEnv())];
if (whole) {
  process.stderr.write(
    `\n[test] second pass: the end-to-end tests again, every test server on its own PostgreSQL database\n`,
  );
  passes.push(
    await pass(['test', `^(${onBothEngines.join('|')})\\.test\\.ts$`], testEnv({ TEST_ENGINE: 'postgresql' })),
  );
  let haproxy;
  try {
    haproxy = ensureHaproxy();
  } catch (e) {
    // As test/compose.test.ts: skipped, saying why, where HAProxy is missing and cannot be installed (not root).
    process.stderr.write(`\n[test] third pass SKIPPED: ${e.message}\n`);
  }
  if (haproxy) {
    process.stderr.write(
      `\n[test] third pass: ${throughHaproxy.join(', ')} through HAProxy, three instances on one PostgreSQL database\n`,
    );
    passes.push(
      await pass(
        ['test', `^(${throughHaproxy.join('|')})\\.test\\.ts$`],
        testEnv({ TEST_ENGINE: 'postgresql', TEST_TOPOLOGY: 'haproxy' }),
      ),
    );
  }
}
await cluster?.stop();
const problems = passes.filter((p) => p.problem).map((p) => p.problem);
for (const problem of problems) console.error(problem);
const total = passes.reduce((n, p) => n + (p.total ?? 0), 0);
const passed = passes.reduce((n, p) => n + (p.passed ?? 0), 0);
const failed = total - passed;
if (passes.length > 1)
  process.stdout.write(
    `\n  All passes: ${total} tests (SQLite, PostgreSQL, then through HAProxy)\n  Total:     ${total}\n  Passed:    ${passed}\n`,
  );
process.stdout.write(`  Failed:    ${failed}\n\n`);
process.exit(problems.length > 0 || failed > 0 ? 1 : passes.every((p) => p.code === 0) ? 0 : 1);
