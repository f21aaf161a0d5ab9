// A headless browser for the tests of pages (/docs): the machine's Chromium, installed from Debian's `chromium`
// package first when there is none and this is root (as CI is).
//   node scripts/tooling/browser.mjs    prints the browser's path, installing it if needed
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const candidates = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
const say = (line) => process.stderr.write(`[browser] ${line}\n`);

/** The path of a Chromium, installed when missing and allowed; throws saying what to install otherwise. */
export function ensureChromium() {
  const found = candidates.find((path) => existsSync(path));
  if (found) return found;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get'))
    throw new Error('no Chromium (install Debian\'s "chromium" package, or run as root to let this script do it)');
  say("installing Debian's chromium package (apt-get; a minute or two, once per machine)");
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const installed = candidates.find((path) => existsSync(path));
  if (!installed) throw new Error('apt-get installed chromium, but no chromium binary was found');
  return installed;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(`usage: node scripts/tooling/browser.mjs
Prints the path of the machine's Chromium, installing Debian's chromium package first when missing (as root).`);
    process.exit(0);
  }
  console.log(ensureChromium());
}
