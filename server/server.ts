// The composition root: assembles the server from the runtime, the generated parts and the hand-written
// handlers, and runs it. Nothing imports it but the entry point and tests; the runtime never imports handlers.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { createRouter as CreateRouter, createSteps as CreateSteps } from '../generated/routes.js';
import type { createRpcTable as CreateRpcTable } from '../generated/grpc.js';
import { handlers, v1Extensions } from '../handlers/index.js';
import { TokenExchange } from '../handlers/sts.js';
import { Policy } from '../runtime/authorization.js';
import { ensureBootstrap } from '../runtime/bootstrap.js';
import { defaultIssuer, type Config } from '../runtime/config.js';
import { createApp } from '../runtime/http.js';
import { listen } from '../runtime/http-server.js';
import {
  defaultGeneratedDir,
  loadDataParts,
  loadGeneratedModule,
  openResources,
  type DataParts,
} from '../runtime/open-resources.js';
import { TokenIssuer } from '../runtime/issuer.js';
import { DeliveryWorker } from '../runtime/events/delivery-worker.js';
import { recordIssuer } from '../runtime/issuer-record.js';
import { Operations } from '../runtime/operations.js';
import { createRouteOperations } from '../runtime/route-operations.js';
import { createV1Router } from '../runtime/v1/adapter.js';
import { createRpcOperations } from '../runtime/grpc/operations.js';
import { shareConnections } from '../runtime/grpc/same-port.js';
import { createGrpcServer } from '../runtime/grpc/server.js';
import { maxBodyBytes } from '../runtime/json-body.js';
import { loadValidators } from '../runtime/validation.js';

export interface GeneratedParts extends DataParts {
  createRouter: typeof CreateRouter;
  createSteps: typeof CreateSteps;
  createRpcTable: typeof CreateRpcTable;
}

/** Loads what npm run generate wrote; another directory serves another spec (tests use this). */
export async function loadGenerated(dir = defaultGeneratedDir): Promise<GeneratedParts> {
  const [data, routes, grpc] = await Promise.all([
    loadDataParts(dir),
    loadGeneratedModule<{ createRouter: typeof CreateRouter; createSteps: typeof CreateSteps }>(dir, 'routes.ts'),
    loadGeneratedModule<{ createRpcTable: typeof CreateRpcTable }>(dir, 'grpc.ts'),
  ]);
  return {
    ...data,
    createRouter: routes.createRouter,
    createSteps: routes.createSteps,
    createRpcTable: grpc.createRpcTable,
  };
}

export interface RunningServer {
  url: string;
  /** where gRPC alone is served when GRPC_PORT is set (it is always served on url's port too) */
  grpcPort?: number;
  issuer: TokenIssuer;
  close(): Promise<void>;
}

export async function startServer(config: Config, generated?: GeneratedParts): Promise<RunningServer> {
  const parts = generated ?? (await loadGenerated());
  const { model } = parts;
  const { store, resources } = await openResources(config, parts);
  await ensureBootstrap(store, model, config.dataDir);
  performance.mark('bootstrap');
  const policy = new Policy(resources);
  const validators = loadValidators(parts.dir);
  const operations = new Operations(model, resources, policy, validators);
  const v2 = parts.createRouter(createRouteOperations(operations), handlers);
  const v1 = createV1Router(
    { model, resources, policy, validators, operations, createSteps: parts.createSteps(handlers) },
    v1Extensions,
  );
  const openapi = JSON.parse(readFileSync(join(parts.dir, 'openapi.json'), 'utf8'));
  const log = config.log
    ? (line: Record<string, unknown>) =>
        process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`)
    : () => {};
  let issuer: TokenIssuer | undefined;
  const authenticate = async (token: string) => policy.authenticate(await issuer!.verify(token));
  const exchange = new TokenExchange(resources, () => issuer!);
  const app = createApp({
    model,
    openapi,
    log,
    issuer: () => issuer!,
    authenticate,
    publicRoutes: [{ router: exchange.router(), serves: (path) => path === '/sts/exchange' }],
    // Every v1 path has a /v1/ segment: other requests skip matching the v1 routes.
    routes: [{ router: v1, serves: (path) => path.includes('/v1/') }, { router: v2 }],
  });
  performance.mark('http app');
  const grpc = createGrpcServer({
    generatedDir: parts.dir,
    rpcs: parts.createRpcTable(createRpcOperations(operations), handlers),
    authenticate,
    errorDomain: (domain) => `${domain}.${model.service}.dev`,
    log,
    maxMessageBytes: maxBodyBytes,
  });
  performance.mark('grpc');
  const server: Server = await listen(app, { ...config, errorDomain: `api.${model.service}.dev` });
  shareConnections(server, (socket) => grpc.inject(socket), config.headersTimeoutMs);
  const grpcPort = config.grpcPort === undefined ? undefined : await grpc.listen(config.host, config.grpcPort);
  performance.mark('listen');
  const { port } = server.address() as AddressInfo;
  // With PORT=0 the issuer URL is known only once listening.
  const url = defaultIssuer({ ...config, port, issuerUrl: undefined });
  const iss = config.issuerUrl ?? url;
  issuer = await TokenIssuer.open(config.dataDir, iss, config.audience ?? iss);
  recordIssuer(config.dataDir, { issuer: iss, audience: config.audience ?? iss });
  performance.mark('keys');
  const deliveries = config.events && new DeliveryWorker(resources, () => issuer!, config.events, log);
  deliveries?.start();
  return {
    url,
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    issuer,
    close: async () => {
      await deliveries?.stop();
      await Promise.all([
        grpc.close(),
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        }),
      ]);
      await store.close();
    },
  };
}
