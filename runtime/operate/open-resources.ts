// Opens the data of a data directory: the store and the Resources over it, without the HTTP application, so the
// operator tools (import, token) and the server open it the same way.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EntitySchema } from '@mikro-orm/core';
import type { Config } from './config.js';
import type { ApiModel } from '../model/api-model.js';
import { SecretSeal } from '../storage/secret-seal.js';
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

/** The server's secret for page tokens, created on first start and kept in the data directory. */
function pageTokenSecret(dataDir: string): Buffer {
  const file = join(dataDir, 'page-token.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

/** observe: how long each statement of our own took (the server's metrics). */
export async function openResources(
  config: Config,
  parts: DataParts,
  observe?: StatementObserver,
): Promise<{ store: Store; resources: Resources }> {
  protectDataDir(config.dataDir);
  const schema = { version: parts.model.schemaVersion, resources: parts.model.resources };
  const store = await openStore(config.database, parts.entities, schema, observe, config.reads);
  const pageTokens = new PageToken(pageTokenSecret(config.dataDir));
  const secrets = SecretSeal.open(config.dataDir, config.secretsKeys);
  return { store, resources: new Resources(store, parts.model, pageTokens, secrets, config.v1ListMax) };
}
