// The issuer and audience the server of a data directory signs and checks tokens with, recorded at each start,
// so that the CLIs (token, rotate-key) mint tokens it accepts whatever port it listens on. On PostgreSQL the
// record is also a row of the database (runtime/storage/server-state.ts): the CLIs need no server's DATA_DIR.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, defaultIssuer, type Config } from './config.js';
import type { ServerState } from '../storage/server-state.js';

export interface IssuerRecord {
  issuer: string;
  audience: string;
}

const fileOf = (dataDir: string) => join(dataDir, 'issuer.json');

/** Written whole or not at all: a CLI reading it while a server starts sees the old record or the new one. */
export function recordIssuer(dataDir: string, record: IssuerRecord): void {
  const file = fileOf(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

const rowName = 'issuer';

/** The record of the instances on one database: the last to start writes it, as with a shared file. */
export async function recordSharedIssuer(shared: ServerState, record: IssuerRecord): Promise<void> {
  const value = JSON.stringify(record);
  const found = await shared.ensure(rowName, () => value);
  if (found.value !== value) await shared.change(rowName, () => value);
}

export async function sharedIssuer(shared: ServerState): Promise<IssuerRecord | undefined> {
  const found = await shared.read(rowName);
  return found && (JSON.parse(found.value) as IssuerRecord);
}

function readIssuerRecord(dataDir: string): IssuerRecord | undefined {
  const file = fileOf(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as IssuerRecord;
    if (typeof record.issuer === 'string' && typeof record.audience === 'string') return record;
  } catch {
    // reported below, as for a record of the wrong shape
  }
  throw new ConfigError(`${file} is not an issuer record; delete it and start the server to write it again`);
}

/**
 * What a tool mints with: ISSUER_URL and TOKEN_AUDIENCE when set, else what the server of DATA_DIR (or, given,
 * of the database) last started with, else the default of a server on HOST and PORT.
 */
export function issuerInUse(config: Config, shared?: IssuerRecord): IssuerRecord {
  if (config.issuerUrl) return { issuer: config.issuerUrl, audience: config.audience ?? config.issuerUrl };
  const recorded = shared ?? readIssuerRecord(config.dataDir);
  const issuer = recorded?.issuer ?? defaultIssuer(config);
  return { issuer, audience: config.audience ?? recorded?.audience ?? issuer };
}
