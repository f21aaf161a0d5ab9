// The composition root: assembles the server from the runtime, the generated parts and the hand-written
// handlers, and runs it. Nothing imports it but the entry point and tests; the runtime never imports handlers.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { createRouter as CreateRouter, createSteps as CreateSteps, Handlers } from '../generated/routes.js';
import type { createRpcTable as CreateRpcTable } from '../generated/grpc.js';
import { TokenExchange } from '../framework/handlers/sts.js';
import { Policy, type Principal } from '../runtime/access/authorization.js';
import { ensureBootstrap } from '../runtime/access/bootstrap.js';
import { defaultIssuer, type Config } from '../runtime/operate/config.js';
import { createApp, type RouteTable } from '../runtime/http/app.js';
import { closeWithin, drainConnections, listen } from '../runtime/http/listener.js';
import {
  defaultGeneratedDir,
  loadDataParts,
  loadGeneratedModule,
  openResources,
  type DataParts,
} from '../runtime/operate/open-resources.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { keyRow } from '../runtime/access/signing-keys.js';
import type { ServerState } from '../runtime/storage/server-state.js';
import { RefreshTokens } from '../runtime/access/refresh-tokens.js';
import { DeliveryWorker } from '../runtime/events/delivery-worker.js';
import { startStoringObjectsAsShown } from '../runtime/tables/stored-objects.js';
import { EventQuotas } from '../runtime/events/quotas.js';
import { recordIssuer, recordSharedIssuer } from '../runtime/operate/issuer-record.js';
import { Operations } from '../runtime/pipeline/operations.js';
import { createRouteOperations } from '../runtime/http/route-operations.js';
import { Router } from '../runtime/http/router.js';
import { createV1Router, type V1Extension } from '../runtime/http/v1/adapter.js';
import { createRpcOperations, type RpcMethod } from '../runtime/grpc/operations.js';
import { shareConnections } from '../runtime/grpc/same-port.js';
import { createGrpcServer, type GrpcOptions } from '../runtime/grpc/server.js';
import { tokenServiceRpcs } from '../runtime/grpc/token-service.js';
import { v1Rpcs } from '../runtime/grpc/v1.js';
import type { V1RpcRoute } from '../runtime/grpc/rpc.js';
import type { HttpContext } from '../runtime/http/context.js';
import { loadValidators } from '../runtime/pipeline/validation.js';
import type { StatementObserver, Store } from '../runtime/storage/store.js';
import type { Resources } from '../runtime/resources/standard-methods.js';
import { healthRoutes } from '../runtime/http/health.js';
import { docsRoutes } from '../runtime/http/docs-page.js';
import { Metrics } from '../runtime/operate/metrics.js';
import { metricsRoute } from '../runtime/http/metrics-route.js';
import { RateLimit } from '../runtime/operate/rate-limit.js';

/** The token service's paths (framework/handlers/sts.ts): served before authentication, as they read their own credentials. */
const stsPaths = new Set(['/sts/exchange', '/sts/exchange_refresh_token', '/sts/headless_sessions']);

export interface GeneratedParts extends DataParts {
  createRouter: typeof CreateRouter;
  createSteps: typeof CreateSteps;
  createRpcTable: typeof CreateRpcTable;
  /** the v1 rpcs and the v1 HTTP routes they are transcoded to; the v1 rpcs not served */
  v1Rpcs: V1RpcRoute[];
  v1Unimplemented: string[];
  /** the API's hand-written behaviour (its handlers/index.ts), which its spec's generated interfaces describe */
  handlers: Handlers;
  v1Extensions: Record<string, V1Extension>;
}

/** What an API's handlers/index.ts exports. */
interface HandlersModule {
  handlers: Handlers;
  v1Extensions?: Record<string, V1Extension>;
}

/** The Platform's handlers: with the Platform's spec only (another spec's generated parts come with their own). */
const platformHandlers = new URL('../handlers/index.ts', import.meta.url).pathname;

/**
 * Loads what npm run generate wrote, and the handlers of its spec; another directory serves another spec (tests
 * and new APIs, scripts/api-project.ts, use this).
 */
export async function loadGenerated(
  dir = defaultGeneratedDir,
  handlersFile = platformHandlers,
): Promise<GeneratedParts> {
  const [data, routes, grpc, own] = await Promise.all([
    loadDataParts(dir),
    loadGeneratedModule<{ createRouter: typeof CreateRouter; createSteps: typeof CreateSteps }>(dir, 'routes.ts'),
    loadGeneratedModule<{
      createRpcTable: typeof CreateRpcTable;
      v1Rpcs: V1RpcRoute[];
      v1Unimplemented: string[];
    }>(dir, 'grpc.ts'),
    import(pathToFileURL(handlersFile).href) as Promise<HandlersModule>,
  ]);
  return {
    ...data,
    createRouter: routes.createRouter,
    createSteps: routes.createSteps,
    createRpcTable: grpc.createRpcTable,
    v1Rpcs: grpc.v1Rpcs,
    v1Unimplemented: grpc.v1Unimplemented,
    handlers: own.handlers,
    v1Extensions: own.v1Extensions ?? {},
  };
}

export interface RunningServer {
  url: string;
  /** where gRPC alone is served when GRPC_PORT is set (it is always served on url's port too) */
  grpcPort?: number;
  issuer: TokenIssuer;
  /** The statements its store keeps prepared (tests count them: they must not grow with request shapes). */
  statementsKept(): Promise<number>;
  /** Begins a graceful stop: /readyz answers 503, answers close their connections; close() ends it. */
  drain(): void;
  close(): Promise<void>;
}

function deliveryProblem(worker: DeliveryWorker | undefined): string | undefined {
  return worker ? worker.problem() : 'the event delivery worker has not started yet';
}

/**
 * /healthz and /readyz, and /metrics as METRICS says: before authentication (open), or after it for a caller
 * holding CAP_METRICS_READ in some group (token).
 */
function operatorRoutes(
  config: Config,
  store: Store,
  policy: Policy,
  metrics: Metrics | undefined,
  worker: () => DeliveryWorker | undefined,
  draining: () => boolean,
): { before: RouteTable[]; after: RouteTable[] } {
  const health = healthRoutes({
    // First, and at once: a load balancer stops sending here while the server still answers (DRAIN_SECONDS).
    shutdown: async () => (draining() ? 'the server is shutting down (draining)' : undefined),
    database: async () => void (await store.read.all('select 1')),
    schema: async () => ((await store.schemaChanged()) ? 'another process changed the schema since start' : undefined),
    ...(config.events ? { events: async () => deliveryProblem(worker()) } : {}),
  });
  if (!metrics) return { before: [health], after: [] };
  if (config.metrics === 'open') return { before: [health, metricsRoute(metrics)], after: [] };
  const authorize = (principal: Principal) => policy.requireCapability(principal, ['CAP_METRICS_READ'], undefined);
  return { before: [health], after: [metricsRoute(metrics, authorize)] };
}

/** What the operator settings add to the gRPC server: its calls counted, and the callers' shared buckets. */
function operatorHooks(
  metrics: Metrics | undefined,
  rateLimit: RateLimit | undefined,
): Pick<GrpcOptions, 'finished' | 'rateLimit'> {
  return {
    ...(metrics
      ? { finished: (rpc: string, code: string, seconds: number) => metrics.rpcFinished(rpc, code, seconds) }
      : {}),
    ...(rateLimit ? { rateLimit } : {}),
  };
}

/**
 * A bearer token's principal: its subject, when the token is ours and the subject an identity here. At once,
 * without a promise, for a token verified before whose subject's grants are cached: nearly every request.
 */
function tokenAuthentication(
  issuer: () => TokenIssuer,
  policy: Policy,
  metrics: Metrics | undefined,
): (token: string) => Principal | Promise<Principal> {
  const refused = (e: unknown): never => {
    metrics?.tokenChecked('refused', 'unknown_subject');
    throw e;
  };
  const principalOf = (subject: string): Principal | Promise<Principal> => {
    try {
      const principal = policy.authenticate(subject);
      return principal instanceof Promise ? principal.catch(refused) : principal;
    } catch (e) {
      return refused(e);
    }
  };
  return (token) => {
    const subject = issuer().verify(token);
    return typeof subject === 'string' ? principalOf(subject) : subject.then(principalOf);
  };
}

/** What /metrics follows of the storage: the write queue, and how often the access records changed. */
function watchStorage(metrics: Metrics, store: Store, resources: Resources): void {
  if (store.writeQueueDepth) metrics.watchWriteQueue(store.writeQueueDepth);
  if (store.lostRaces) metrics.watchLostRaces(store.lostRaces);
  metrics.watchAccessChanges(() => resources.accessVersion);
}

/** The server as its own issuer, at ISSUER_URL or the URL it listens on (with PORT=0 known only once listening). */
async function openIssuer(
  config: Config,
  url: string,
  metrics: Metrics | undefined,
  shared: ServerState | undefined,
  log: (line: Record<string, unknown>) => void,
): Promise<TokenIssuer> {
  const iss = config.issuerUrl ?? url;
  const keys = shared ? await keyRow(shared, config.dataDir) : config.dataDir;
  const issuer = await TokenIssuer.open(keys, iss, config.audience ?? iss);
  if (metrics) issuer.observe = (outcome, reason) => metrics.tokenChecked(outcome, reason);
  issuer.keysUnreadable = (problem) =>
    log(
      problem === undefined
        ? { level: 'info', watch: 'signing-keys', message: 'the stored signing keys are read again' }
        : {
            level: 'error',
            watch: 'signing-keys',
            error: problem,
            meaning: 'tokens are verified and signed with the keys read before; logged again once a look succeeds',
          },
    );
  const record = { issuer: iss, audience: config.audience ?? iss };
  recordIssuer(config.dataDir, record);
  if (shared) await recordSharedIssuer(shared, record);
  return issuer;
}

/** What the gRPC server takes of the configuration. */
function grpcOptions(config: Config, parts: GeneratedParts) {
  return {
    generatedDir: parts.dir,
    errorDomain: (domain: string) => `${domain}.${parts.model.service}.dev`,
    maxMessageBytes: config.maxBodyBytes,
    limits: config.grpcLimits,
    requestTimeoutMs: config.requestTimeoutMs,
    ...(config.trustedProxies ? { trustedProxies: config.trustedProxies } : {}),
  };
}

/**
 * Every rpc: the generated table, v1's rpcs run by the routes that serve v1 over HTTP (the v1 adapter, and the
 * generated router's v1 endpoints), and the token service where api.yaml names its package.
 */
function rpcTable(
  parts: GeneratedParts,
  operations: Operations,
  exchange: TokenExchange,
  v1Routes: Router[],
): Record<string, RpcMethod> {
  const { tokenService } = parts.model.proto;
  const dispatchV1 = (ctx: HttpContext) =>
    v1Routes.reduce<Promise<void> | true | undefined>((a, r) => a ?? r.dispatch(ctx), undefined);
  return {
    ...parts.createRpcTable(createRpcOperations(operations), parts.handlers),
    ...v1Rpcs(parts.v1Rpcs, parts.v1Unimplemented, dispatchV1),
    ...(tokenService
      ? tokenServiceRpcs(tokenService, {
          exchange: (token, request) => exchange.exchangeFor(token, request),
          refresh: (token, request) => exchange.refresh(token, request),
        })
      : {}),
  };
}

export async function startServer(given: Config, generated?: GeneratedParts): Promise<RunningServer> {
  const parts = generated ?? (await loadGenerated());
  const { model } = parts;
  // Events are delivered where the spec includes the framework's events core (its subscriptions and deliveries).
  const config: Config = { ...given, events: model.resources.deliveries && given.events };
  const metrics = config.metrics === 'off' ? undefined : new Metrics();
  const timed: StatementObserver | undefined = metrics && ((kind, seconds) => metrics.statement(kind, seconds));
  const { store, resources, shared } = await openResources(config, parts, timed);
  await ensureBootstrap(store, model, config.dataDir, shared);
  // A database from before credentials were sealed holds them in plain text: sealed now, before any request.
  await resources.sealStoredSecrets();
  performance.mark('bootstrap');
  const policy = new Policy(resources, config.grantsCacheMs);
  if (metrics) watchStorage(metrics, store, resources);
  const validators = loadValidators(parts.dir);
  const { emailDomains, outbound, eventLimits } = config;
  const quotas = new EventQuotas(eventLimits, shared);
  const operations = new Operations(model, resources, policy, validators, emailDomains, outbound, quotas);
  const v2 = parts.createRouter(createRouteOperations(operations), parts.handlers, new Router());
  const createSteps = parts.createSteps(parts.handlers);
  const v1 = createV1Router({ model, resources, policy, validators, operations, createSteps }, parts.v1Extensions);
  const openapi = JSON.parse(readFileSync(join(parts.dir, 'openapi.json'), 'utf8'));
  const log = config.log
    ? (line: Record<string, unknown>) =>
        process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`)
    : () => {};
  let issuer: TokenIssuer | undefined;
  const authenticate = tokenAuthentication(() => issuer!, policy, metrics);
  const refreshTokens = new RefreshTokens(resources, config.refreshTokenSeconds);
  const exchange = new TokenExchange(resources, () => issuer!, config.outbound, refreshTokens);
  let deliveries: DeliveryWorker | undefined;
  let draining = false;
  const operator = operatorRoutes(
    config,
    store,
    policy,
    metrics,
    () => deliveries,
    () => draining,
  );
  // One set of buckets for both transports: a caller is limited wherever it calls.
  const rateLimit = config.rateLimit && new RateLimit(config.rateLimit.perSecond, config.rateLimit.burst);
  const app = createApp({
    model,
    openapi,
    log: config.log ? log : undefined,
    issuer: () => issuer!,
    authenticate,
    publicRoutes: [
      ...operator.before,
      docsRoutes(model.title),
      // Only where the spec includes the framework's token service (api.yaml include: [sts]).
      ...(model.tokenExchange === false
        ? []
        : [{ router: exchange.router(), serves: (path: string) => stsPaths.has(path) }]),
    ],
    routes: [
      ...operator.after,
      // Every v1 path has a /v1/ segment: other requests skip matching the v1 routes.
      { router: v1, serves: (path) => path.includes('/v1/') },
      { router: v2 },
    ],
    metrics,
    corsOrigins: config.corsOrigins,
    maxBodyBytes: config.maxBodyBytes,
    rateLimit,
    trustedProxies: config.trustedProxies,
  });
  performance.mark('http app');
  const grpc = createGrpcServer({
    ...grpcOptions(config, parts),
    rpcs: rpcTable(parts, operations, exchange, [v1, v2]),
    authenticate,
    log,
    ...operatorHooks(metrics, rateLimit),
  });
  performance.mark('grpc');
  const server: Server = await listen(app, { ...config, errorDomain: `api.${model.service}.dev` });
  const connections = shareConnections(server, (socket) => grpc.inject(socket), config.headersTimeoutMs);
  const grpcPort = config.grpcPort === undefined ? undefined : await grpc.listen(config.host, config.grpcPort);
  performance.mark('listen');
  const url = defaultIssuer({ ...config, port: (server.address() as AddressInfo).port, issuerUrl: undefined });
  issuer = await openIssuer(config, url, metrics, shared, log);
  performance.mark('keys');
  deliveries = config.events && new DeliveryWorker(resources, () => issuer!, config.events, quotas, log);
  deliveries?.start();
  if (metrics && deliveries) metrics.watchDeliveries(deliveries);
  const storedObjects = startStoringObjectsAsShown(store, resources.everyTable(), log);
  return {
    url,
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    issuer,
    statementsKept: () => store.statementsKept(),
    drain: () => {
      draining = true;
      drainConnections(server);
    },
    close: async () => {
      await Promise.all([deliveries?.stop(), storedObjects.stop()]);
      await Promise.all([grpc.close(config.shutdownGraceMs), closeWithin(server, config.shutdownGraceMs, connections)]);
      issuer?.close();
      await store.close();
    },
  };
}
