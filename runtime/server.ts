// Assembles the server from the generated parts and the hand-written handlers, and runs it.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { Middleware } from 'koa';
import { pathToFileURL } from 'node:url';
import type { EntitySchema } from '@mikro-orm/core';
import type { createRouter as CreateRouter, createSteps as CreateSteps } from '../generated/routes.js';
import { handlers, v1Extensions } from '../handlers/index.js';
import { TokenExchange } from '../handlers/sts.js';
import { createV1Router } from '../handlers/v1.js';
import type { ApiModel } from './model.js';
import { Policy } from './authorization.js';
import { ensureBootstrap } from './bootstrap.js';
import { defaultIssuer, type Config } from './config.js';
import { createApp } from './http.js';
import { listen } from './http-server.js';
import { TokenIssuer } from './issuer.js';
import { recordIssuer } from './issuer-record.js';
import { PageToken } from './page-token.js';
import { Resources } from './resources.js';
import { createRouteOperations } from './route-operations.js';
import { openStore, type Store } from './store.js';
import { loadValidators } from './validation.js';

export const defaultGeneratedDir = new URL('../generated/', import.meta.url).pathname;

export interface GeneratedParts {
  dir: string;
  model: ApiModel;
  entities: EntitySchema[];
  createRouter: typeof CreateRouter;
  createSteps: typeof CreateSteps;
}

/** Loads what npm run generate wrote; another directory serves another spec (tests use this). */
export async function loadGenerated(dir = defaultGeneratedDir): Promise<GeneratedParts> {
  const load = async (file: string) => {
    try {
      return await import(pathToFileURL(join(dir, file)).href);
    } catch (e) {
      throw new Error(`cannot load ${join(dir, file)} (${(e as Error).message}); run npm run generate`);
    }
  };
  const [{ apiModel }, { entities }, { createRouter, createSteps }] = await Promise.all([load('model.ts'), load('entities.ts'), load('routes.ts')]);
  return { dir, model: apiModel, entities, createRouter, createSteps };
}

/** The server's secret for page tokens, created on first start and kept in the data directory. */
function pageTokenSecret(dataDir: string): Buffer {
  const file = join(dataDir, 'page-token.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

export async function openResources(config: Config, generated: GeneratedParts): Promise<{ store: Store; resources: Resources }> {
  mkdirSync(config.dataDir, { recursive: true });
  const store = await openStore(config.databaseFile, generated.entities);
  return { store, resources: new Resources(store, generated.model, new PageToken(pageTokenSecret(config.dataDir))) };
}

export interface RunningServer {
  url: string;
  issuer: TokenIssuer;
  close(): Promise<void>;
}

export async function startServer(config: Config, generated?: GeneratedParts): Promise<RunningServer> {
  const parts = generated ?? await loadGenerated();
  const { model } = parts;
  const { store, resources } = await openResources(config, parts);
  await ensureBootstrap(store, model, config.dataDir);
  const policy = new Policy(resources);
  const validators = loadValidators(parts.dir);
  const ops = createRouteOperations({ model, store, resources, validators, policy });
  const v1 = createV1Router({ model, resources, policy, validators, createSteps: parts.createSteps(handlers) }, v1Extensions);
  const openapi = JSON.parse(readFileSync(join(parts.dir, 'openapi.json'), 'utf8'));
  const log = config.log ? (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`) : () => {};
  let issuer: TokenIssuer | undefined;
  const exchange = new TokenExchange(store, model, () => issuer!);
  const v1Routes = v1.routes() as unknown as Middleware;
  // Every v1 path has a /v1/ segment: other requests skip matching the v1 routes.
  const v1Only: Middleware = (ctx, next) => (ctx.path.includes('/v1/') ? v1Routes(ctx, next) : next());
  const app = createApp({
    model, router: parts.createRouter(ops, handlers), openapi, log, issuer: () => issuer!,
    authenticate: async (token) => policy.authenticate(await issuer!.verify(token)),
    publicRoutes: [exchange.middleware()], extraRoutes: [v1Only],
  });
  const server: Server = await listen(app, { ...config, errorDomain: `api.${model.service}.dev` });
  const { port } = server.address() as AddressInfo;
  // With PORT=0 the issuer URL is known only once listening.
  const url = defaultIssuer({ ...config, port, issuerUrl: undefined });
  const iss = config.issuerUrl ?? url;
  issuer = await TokenIssuer.open(config.dataDir, iss, config.audience ?? iss);
  recordIssuer(config.dataDir, { issuer: iss, audience: config.audience ?? iss });
  return {
    url,
    issuer,
    close: async () => {
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeIdleConnections(); });
      await store.close();
    },
  };
}
