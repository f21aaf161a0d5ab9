// Assembles the server from the generated parts and the hand-written handlers, and runs it.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Server } from 'node:http';
import { entities } from '../generated/entities.js';
import { apiModel } from '../generated/model.js';
import { createRouter } from '../generated/routes.js';
import { handlers } from '../handlers/index.js';
import { openPolicy } from './authorization.js';
import type { Config } from './config.js';
import { createApp } from './http.js';
import { PageToken } from './page-token.js';
import { Resources } from './resources.js';
import { createRouteOperations } from './route-operations.js';
import { openStore, type Store } from './store.js';
import { loadValidators } from './validation.js';

const generatedDir = new URL('../generated/', import.meta.url).pathname;

/** The server's secret for page tokens, created on first start and kept in the data directory. */
function pageTokenSecret(dataDir: string): Buffer {
  const file = join(dataDir, 'page-token.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

export async function openResources(config: Config): Promise<{ store: Store; resources: Resources }> {
  mkdirSync(config.dataDir, { recursive: true });
  const store = await openStore(config.databaseFile, entities);
  return { store, resources: new Resources(store, apiModel, new PageToken(pageTokenSecret(config.dataDir))) };
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const { store, resources } = await openResources(config);
  const ops = createRouteOperations({ model: apiModel, store, resources, validators: loadValidators(generatedDir), policy: openPolicy });
  const openapi = JSON.parse(readFileSync(join(generatedDir, 'openapi.json'), 'utf8'));
  const log = config.log ? (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`) : () => {};
  const app = createApp({ model: apiModel, router: createRouter(ops, handlers), openapi, log });
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host}:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeIdleConnections(); });
      await store.close();
    },
  };
}
