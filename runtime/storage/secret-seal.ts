// Credentials the API is given (fields marked `secret`, such as an identity provider's clientSecret) are stored
// sealed: AES-256-GCM under a key kept outside the database, so a copy of the database or a backup of it does not
// hold them. The key is SECRETS_KEY (the same on every instance sharing a PostgreSQL database), or else a key
// file made on first start in DATA_DIR. A sealed value names its key, so rotating keeps old values readable.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../model/errors.js';
import type { FieldModel } from '../model/api-model.js';
import { fieldList, type Row } from '../model/records.js';

const prefix = 'sealed:v1:';

/** What names a key in a sealed value: the start of its SHA-256, never the key. */
const idOf = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8);

/** SECRETS_KEY: one or more keys of 32 bytes in base64, comma-separated; the first seals, every one unseals. */
export function secretsKeys(text: string): Buffer[] {
  return text.split(',').map((part) => {
    const key = Buffer.from(part.trim(), 'base64');
    if (key.length !== 32 || !/^[A-Za-z0-9+/_-]+=*$/.test(part.trim()))
      throw new ConfigError(
        'SECRETS_KEY must be keys of 32 bytes in base64 (openssl rand -base64 32), comma-separated',
      );
    return key;
  });
}

/** The key file of DATA_DIR, made (0600) on first start: for one instance, or several sharing DATA_DIR. */
function keyFile(dataDir: string): Buffer {
  const file = join(dataDir, 'secrets.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  return secretsKeys(readFileSync(file, 'utf8').trim())[0];
}

export class SecretSeal {
  private readonly keys: Map<string, Buffer>;
  private readonly sealing: { id: string; key: Buffer };

  constructor(keys: Buffer[]) {
    this.keys = new Map(keys.map((key) => [idOf(key), key]));
    this.sealing = { id: idOf(keys[0]), key: keys[0] };
  }

  /** SECRETS_KEY when set, else DATA_DIR's key file. */
  static open(dataDir: string, configured: Buffer[] | undefined): SecretSeal {
    return new SecretSeal(configured ?? [keyFile(dataDir)]);
  }

  /** `field` (the path of the value in its record) is bound in: a sealed value moved to another field fails. */
  seal(text: string, field: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealing.key, iv).setAAD(Buffer.from(field));
    const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return `${prefix}${this.sealing.id}:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')}`;
  }

  /** The plain text of a sealed value; a value stored before sealing (plain text) is read as it is. */
  unseal(value: string, field: string): string {
    if (!value.startsWith(prefix)) return value;
    const [id, body] = value.slice(prefix.length).split(':');
    const key = this.keys.get(id);
    if (!key) throw new Error(`a secret sealed with key ${id}, which SECRETS_KEY does not hold`);
    const raw = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12)).setAAD(Buffer.from(field));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }

  /**
   * A record about to be stored, its secret fields (at any depth) sealed. What a request gives is always plain
   * text: a value that looks sealed is sealed again, never trusted. `keepSealed`: values already sealed (read
   * back from the database) are left as they are.
   */
  sealFields(row: Row, fields: Record<string, FieldModel>, keepSealed = false, at = ''): Row {
    // Most resources hold no secret: their records are stored as given (every caller gives one of its own).
    if (!fieldsHoldSecret(fields)) return row;
    const out: Row = { ...row };
    for (const [name, f] of fieldList(fields)) {
      const value = out[name];
      const path = at ? `${at}.${name}` : name;
      if (f.secret && typeof value === 'string') {
        if (!(keepSealed && value.startsWith(prefix))) out[name] = this.seal(value, path);
      } else if (f.type === 'object' && f.fields && value && typeof value === 'object')
        out[name] = Array.isArray(value)
          ? value.map((v: Row) => this.sealFields(v, f.fields!, keepSealed, path))
          : this.sealFields(value as Row, f.fields, keepSealed, path);
    }
    return out;
  }
}

const holding = new WeakMap<Record<string, FieldModel>, boolean>();

/** Whether any of these fields is a secret or holds one, known once per field set. */
function fieldsHoldSecret(fields: Record<string, FieldModel>): boolean {
  let held = holding.get(fields);
  if (held === undefined) holding.set(fields, (held = Object.values(fields).some(holdsSecret)));
  return held;
}

/** Whether a field is a secret or holds one at some depth. */
export function holdsSecret(f: FieldModel): boolean {
  return f.secret === true || Object.values(f.fields ?? {}).some(holdsSecret);
}
