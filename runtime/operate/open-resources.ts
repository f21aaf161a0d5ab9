// Opens the data of a data directory: the store and the Resources over it, without the HTTP application, so the
// operator tools (import, token) and the server open it the same way.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EntitySchema } from '@mikro-orm/core';
import { ConfigError, type Config } from './config.js';
import type { ApiModel } from '../model/api-model.js';
import { SecretSeal } from '../storage/secret-seal.js';
import { ServerState } from '../storage/server-state.js';
import { protectDataDir } from '../storage/data-dir.js';
import { PageToken } from '../lists/page-token.js';
import { Resources } from '../resources/standard-methods.js';
import { openStore } from '../storage/open-store.js';
import type { StatementObserver, Store } from '../storage/store.js';

export const defaultGeneratedDir = new URL('../../generated/', import.meta.url).pathname;

/** What the data needs of generated/: the model and the entity schemas. */
export interface DataParts {
  dir: string;
  model: ApiModel;
  entities: EntitySchema[];
}

/** Imports one generated module; another directory serves another spec (tests use this). */
export async function loadGeneratedModule<T>(dir: string, file: string): Promise<T> {
  try {
    return (await import(pathToFileURL(join(dir, file)).href)) as T;
  } catch (e) {
    throw new Error(`cannot load ${join(dir, file)} (${(e as Error).message}); run npm run generate`, { cause: e });
  }
}

export async function loadDataParts(dir = defaultGeneratedDir): Promise<DataParts> {
  const [{ apiModel }, { entities }] = await Promise.all([
    loadGeneratedModule<{ apiModel: ApiModel }>(dir, 'model.ts'),
    loadGeneratedModule<{ entities: EntitySchema[] }>(dir, 'entities.ts'),
  ]);
  return { dir, model: apiModel, entities };
}

/**
 * The server's secret for page tokens, created on first start: in the data directory, or on PostgreSQL in the
 * database (from the data directory's file when a deployment that shared it has one), the same for every instance.
 */
async function pageTokenSecret(dataDir: string, shared: ServerState | undefined): Promise<Buffer> {
  const file = join(dataDir, 'page-token.key');
  const made = () => (existsSync(file) ? readFileSync(file, 'utf8').trim() : randomBytes(32).toString('hex'));
  if (shared) {
    const { value } = await shared.ensure('page-token', made);
    // Buffer.from drops what is not hex: a row changed by hand would leave a short key or none, silently.
    if (!/^[0-9a-f]{64}$/.test(value))
      throw new ConfigError("the database's page-token is not 64 hex digits: delete its row of server_state");
    return Buffer.from(value, 'hex');
  }
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

/** The opened data: shared is what instances on one PostgreSQL database share (absent on SQLite: DATA_DIR's files). */
export interface OpenedData {
  store: Store;
  resources: Resources;
  shared?: ServerState;
}

/** observe: how long each statement of our own took (the server's metrics). */
export async function openResources(
  config: Config,
  parts: DataParts,
  observe?: StatementObserver,
): Promise<OpenedData> {
  protectDataDir(config.dataDir);
  const schema = { version: parts.model.schemaVersion, resources: parts.model.resources };
  const store = await openStore(config.database, parts.entities, schema, observe, config.reads);
  try {
    // Sealed with SECRETS_KEY alone: a key file of one instance's DATA_DIR would lock the others out.
    const shared =
      store.dialect.name === 'postgresql'
        ? new ServerState(store, config.secretsKeys && new SecretSeal(config.secretsKeys))
        : undefined;
    const pageTokens = new PageToken(await pageTokenSecret(config.dataDir, shared));
    const secrets = SecretSeal.open(config.dataDir, config.secretsKeys);
    const resources = new Resources(store, parts.model, pageTokens, secrets, config.v1ListMax);
    return { store, resources, ...(shared && { shared }) };
  } catch (e) {
    await store.close();
    throw e;
  }
}
