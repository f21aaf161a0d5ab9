// A throwaway PostgreSQL for tests and local trials: a fresh cluster in a temporary directory, on a free
// loopback port, C collation, no password (trust on loopback), stopped and deleted at the end. Uses the machine's
// PostgreSQL server binaries; installs Debian's `postgresql` package first when there are none and this is root
// (as CI is). As root, the server runs as the `postgres` user, since PostgreSQL refuses to run as root.
//   node scripts/tooling/postgres-cluster.mjs       starts one, prints DATABASE_URL=..., stops on Ctrl-C
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const say = (line) => process.stderr.write(`[postgres] ${line}\n`);

function binDir() {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => b - a) : [];
  for (const v of versions)
    if (existsSync(`/usr/lib/postgresql/${v}/bin/initdb`)) return `/usr/lib/postgresql/${v}/bin`;
  return undefined;
}

/** The server binaries, installed from Debian's packages when missing and allowed. */
function ensureBinaries() {
  let dir = binDir();
  if (dir) return dir;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get'))
    throw new Error(
      'no PostgreSQL server binaries (install Debian\'s "postgresql" package, or run as root to let this script do it)',
    );
  say("installing Debian's postgresql package (apt-get; a minute or two, once per machine)");
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('apt-get', ['install', '-y', '-qq', 'postgresql'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  dir = binDir();
  if (!dir)
    throw new Error('apt-get installed postgresql, but no server binaries were found under /usr/lib/postgresql');
  return dir;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a cluster; resolves to its base URL (add a database name), a way to make databases, and stop. */
/**
 * endWithProcess: the cluster does not keep this process alive, and is stopped when it exits (a test file run
 * alone has no one to call stop(); its data directory is left in the temporary directory).
 * durable: every commit flushed to disk, as production runs it (the benchmark); tests keep nothing across a crash.
 */
export async function startCluster({ endWithProcess = false, durable = false } = {}) {
  const bin = ensureBinaries();
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'platform-api-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const run = (cmd, args) => (asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]);
  const [initCmd, initArgs] = run(`${bin}/initdb`, [
    '-D',
    data,
    '-U',
    'platform',
    '--auth=trust',
    '--no-locale',
    '-E',
    'UTF8',
  ]);
  execFileSync(initCmd, initArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await freePort();
  const [cmd, args] = run(`${bin}/postgres`, [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    // A test cluster: nothing to keep across a crash.
    ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    '-c',
    'max_connections=300',
  ]);
  // Its own process group: runuser answers a signal by signalling its whole group, which must not be ours.
  const launch = async () => {
    const started = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let log = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start within 30 s:\n${log}`)), 30_000);
      const onData = (d) => {
        log += d;
        if (/ready to accept connections/.test(log)) {
          clearTimeout(timer);
          resolve();
        }
      };
      started.stdout.on('data', onData);
      started.stderr.on('data', onData);
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited with ${code}:\n${log}`));
      });
    });
    started.removeAllListeners('exit');
    if (endWithProcess) for (const handle of [started, started.stdout, started.stderr]) handle.unref();
    return started;
  };
  let child = await launch();
  if (endWithProcess)
    process.once('exit', () => {
      try {
        process.kill(-child.pid, 'SIGINT');
      } catch {
        // already stopped
      }
    });
  // SIGINT: PostgreSQL's fast shutdown, to the server and runuser alike.
  const halt = () =>
    new Promise((resolve) => {
      child.once('exit', resolve);
      process.kill(-child.pid, 'SIGINT');
    });
  const base = `postgres://platform@127.0.0.1:${port}`;
  let made = 0;
  return {
    base,
    /** A new empty database; resolves to its URL. */
    async createDatabase(prefix = 'test') {
      const name = `${prefix}_${process.pid}_${++made}`;
      const [c, a] = run(`${bin}/createdb`, ['-h', '127.0.0.1', '-p', String(port), '-U', 'platform', name]);
      execFileSync(c, a, { stdio: ['ignore', 'ignore', 'pipe'] });
      return `${base}/${name}`;
    },
    /** Stops the server and keeps its data, until resume(): an outage under the clients still running. */
    pause: halt,
    /** Starts it again after pause(), on the same port and data. */
    async resume() {
      child = await launch();
    },
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(`usage: node scripts/tooling/postgres-cluster.mjs
Starts a throwaway PostgreSQL (temporary directory, free loopback port, C collation, no password), makes one
database, prints DATABASE_URL=... and runs until Ctrl-C, then stops and deletes it.`);
    process.exit(0);
  }
  const cluster = await startCluster();
  const url = await cluster.createDatabase('platform');
  console.log(`DATABASE_URL=${url}`);
  const stop = async () => {
    await cluster.stop();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
