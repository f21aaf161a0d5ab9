// npm test [-- DIR [PATTERN]]: runs the uvu tests and adds the line uvu's summary lacks, "Failed: N".
// uvu counts skipped tests outside Total, so failed = Total - Passed. A run whose counts show a failure
// exits 1 even when uvu would exit 0 (it does when a before hook throws).
// One throwaway PostgreSQL serves the run's PostgreSQL tests (scripts/postgres-cluster.mjs: installed if missing,
// started on a free port, stopped at the end); the tests fail rather than skip when it cannot start.
import { spawn } from 'node:child_process';
import { startCluster } from './postgres-cluster.mjs';

const args = process.argv.length > 2 ? process.argv.slice(2) : ['test', '\\.test\\.ts$'];
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
function testEnv() {
  const env = { ...process.env, ...(cluster ? { TEST_POSTGRES_URL: `${cluster.base}/postgres` } : {}) };
  delete env.DATABASE_URL;
  return env;
}

const child = spawn(process.execPath, ['--import', 'tsx', 'node_modules/uvu/bin.js', ...args, '--no-color'], {
  stdio: ['inherit', 'pipe', 'inherit'],
  env: testEnv(),
});
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    child.kill(signal);
    void cluster?.stop().finally(() => process.exit(1));
  });
let output = '';
// Once uvu has printed its summary the process ends at once, unless a test left a handle open (a connection,
// a timer): then it would never end. Waited for briefly (TEST_LINGER_MS, default 30 s), then ended and the run
// failed, naming the cause.
const lingerMs = Number(process.env.TEST_LINGER_MS) || 30_000;
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
child.on('close', async (code, signal) => {
  clearTimeout(lingering);
  await cluster?.stop();
  if (lingered) {
    console.error(
      `the tests finished, but something a test opened (a connection, a server, a timer) kept the run alive ` +
        `${lingerMs / 1000} s after uvu's summary: the run fails until it is closed`,
    );
    process.exit(1);
  }
  const count = (label) => {
    const all = [...output.matchAll(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'gm'))];
    return all.length ? Number(all[all.length - 1][1]) : undefined;
  };
  const total = count('Total');
  const passed = count('Passed');
  if (total === undefined || passed === undefined) {
    console.error(`the test run ended without uvu's summary (${signal ? `signal ${signal}` : `exit status ${code}`})`);
    process.exit(code || 1);
  }
  const failed = total - passed;
  process.stdout.write(`  Failed:    ${failed}\n\n`);
  process.exit(failed > 0 ? 1 : (code ?? 1));
});
