// DATA_DIR holds the database, the signing keys and the secrets' key: readable by the server's user alone. The
// directory is made 0700; the files in it that are ours are made 0600 when created and brought to 0600 at each
// start (a data directory from before holds them 0644). A directory the operator made is left as it is (it may
// be a volume other tooling needs to enter), with a warning when others may list it.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The files the server keeps in DATA_DIR (the SQLite ones when the database is there). */
const ours = [
  'platform.sqlite',
  'platform.sqlite-wal',
  'platform.sqlite-shm',
  'signing-keys.json',
  'page-token.key',
  'secrets.key',
  'bootstrap.json',
  'issuer.json',
];

/** A file for this user alone: created empty 0600 if missing (before a library creates it 0644), else chmod. */
export function privateFile(file: string): void {
  if (existsSync(file)) chmodSync(file, 0o600);
  else closeSync(openSync(file, 'a', 0o600));
}

/**
 * mkdir -p, one level at a time: Node's recursive mkdir never returns on some paths it cannot make (/proc/x
 * spins at full CPU), where this throws at the first level that fails.
 */
function makeDirectory(dir: string, mode: number): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDirectory(parent, mode);
  mkdirSync(dir, { mode });
}

/** Makes DATA_DIR (0700) if need be and its files private; answers a warning when others may enter it. */
export function protectDataDir(dataDir: string): string | undefined {
  makeDirectory(dataDir, 0o700);
  for (const name of ours) if (existsSync(join(dataDir, name))) chmodSync(join(dataDir, name), 0o600);
  const mode = statSync(dataDir).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  return `DATA_DIR=${dataDir} is mode ${mode.toString(8).padStart(4, '0')}: others may list it (its files are 0600); chmod 700 it`;
}
