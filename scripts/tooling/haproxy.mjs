// HAProxy for the tests of the compose topology (test/compose.test.ts): the machine's `haproxy`, or Debian's
// `haproxy` package installed first when there is none and this is root (as CI is), as scripts/tooling/postgres-cluster.mjs
// installs PostgreSQL. Says so when it installs.
//   node scripts/tooling/haproxy.mjs     prints the path of the haproxy binary (installing it if needed)
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const say = (line) => process.stderr.write(`[haproxy] ${line}\n`);
const binary = '/usr/sbin/haproxy';

/** The haproxy binary's path; throws, saying why, when there is none and it cannot be installed here. */
export function ensureHaproxy() {
  if (existsSync(binary)) return binary;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get'))
    throw new Error(`no ${binary} (install Debian's "haproxy" package, or run as root to let this script do it)`);
  say("installing Debian's haproxy package (apt-get; once per machine)");
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'haproxy'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (!existsSync(binary)) throw new Error(`apt-get installed haproxy, but there is no ${binary}`);
  return binary;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(ensureHaproxy());
  } catch (e) {
    console.error(`haproxy: ${e.message}`);
    process.exit(1);
  }
}
