// Where the issuer's ES256 signing keys are kept: DATA_DIR/signing-keys.json (SQLite: one machine), or a row of
// the database every instance shares (PostgreSQL, runtime/storage/server-state.ts). Either holds the keys as one
// list, oldest first: the last one signs, every one verifies.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { ServerState } from '../storage/server-state.js';

export interface StoredKey {
  kid: string;
  createdAt: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

export async function newKey(): Promise<StoredKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomBytes(8).toString('hex');
  return {
    kid,
    createdAt: new Date().toISOString(),
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  };
}

/** The keys, and a tag that changes whenever they do. */
export interface KeySet {
  keys: StoredKey[];
  tag: string;
}

export interface SigningKeyStore {
  /** The tag of the keys stored now: a stat of the file, one small row of the database. */
  tag(): string | Promise<string>;
  read(): KeySet | Promise<KeySet>;
  /** Stores what change makes of the stored keys, whole or not at all. */
  change(change: (keys: StoredKey[]) => StoredKey[]): Promise<KeySet>;
  /**
   * Looked at by a timer this often rather than on each use: where a look is a round trip to the database.
   * Absent: looked at on use (a stat), at most once a second.
   */
  watchMs?: number;
}

const fileOf = (dataDir: string) => join(dataDir, 'signing-keys.json');

/** DATA_DIR's key file, made with a first key when there is none. */
export async function keyFile(dataDir: string): Promise<SigningKeyStore> {
  const file = fileOf(dataDir);
  if (!existsSync(file)) {
    try {
      writeFileSync(file, JSON.stringify([await newKey()], null, 2), { mode: 0o600, flag: 'wx' });
    } catch (e) {
      // Another process (the token CLI, a second server) created it first: use theirs.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  const tag = () => String(statSync(file).mtimeMs);
  const read = () => ({ tag: tag(), keys: JSON.parse(readFileSync(file, 'utf8')) as StoredKey[] });
  return {
    tag,
    read,
    async change(change) {
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(change(read().keys), null, 2), { mode: 0o600 });
      renameSync(tmp, file);
      return read();
    },
  };
}

const rowName = 'signing-keys';
/** How often an instance looks at the keys' version row: a rotation is seen by every instance within a second. */
const watchMs = 250;

/**
 * The keys' row of the database, made by the first instance to start: from DATA_DIR's key file when it has one
 * (a deployment that shared DATA_DIR before keeps its keys and the tokens they signed), else with a new key.
 */
export async function keyRow(state: ServerState, dataDir?: string): Promise<SigningKeyStore> {
  // What a failure says reaches the log: never the text read (a parse error quotes it, and it holds private keys).
  const parse = (value: string) => {
    let keys: unknown;
    try {
      keys = JSON.parse(value);
    } catch {
      keys = undefined;
    }
    if (!Array.isArray(keys) || keys.length === 0) throw new Error(`the database's ${rowName} is not a list of keys`);
    return keys as StoredKey[];
  };
  const first = async () =>
    dataDir && existsSync(fileOf(dataDir)) ? readFileSync(fileOf(dataDir), 'utf8') : JSON.stringify([await newKey()]);
  await state.ensure(rowName, first);
  return {
    watchMs,
    tag: async () => String(await state.version(rowName)),
    async read() {
      const found = await state.read(rowName);
      if (!found) throw new Error(`the database holds no ${rowName} (deleted while the server runs?)`);
      return { keys: parse(found.value), tag: String(found.version) };
    },
    async change(change) {
      const changed = await state.change(rowName, (value) => JSON.stringify(change(parse(value))));
      return { keys: parse(changed.value), tag: String(changed.version) };
    },
  };
}
