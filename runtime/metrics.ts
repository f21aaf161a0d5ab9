// The server's Prometheus metrics (prom-client), in a registry of its own: requests by route template, method and
// status, their latency and how many are in flight; statement time and the write queue; token verifications;
// event deliveries; the process. Labels take only bounded values (templates, never paths holding uids).
import { Router } from './router.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Principal } from './authorization.js';
import type { RouteTable } from './http.js';
import { checkParameterNames } from './validation.js';

/** What the delivery worker tells: its counts since start, and how long the oldest undispatched event has waited. */
export interface DeliveryStatus {
  counts: { delivered: number; retried: number; failed: number };
  outboxLagMs(): Promise<number>;
}

export type TokenOutcome = 'cached' | 'verified' | 'refused';

/** A label set's series, asked of prom-client once: it hashes and checks the labels at every call otherwise. */
function seriesOf<V>(kept: Map<string, V>, key: string, make: () => V): V {
  let series = kept.get(key);
  if (series === undefined) kept.set(key, (series = make()));
  return series;
}

/** The process's own metrics (CPU, memory, event loop, GC): one set per process, however many servers it runs. */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route template, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route template and method',
    labelNames: ['route', 'method'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  /** counted in a plain number, read at each scrape: a gauge's inc and dec cost a label lookup per request */
  private answering = 0;
  private readonly inFlight: Gauge = new Gauge({
    name: 'http_requests_in_flight',
    help: 'HTTP requests being answered',
    registers: [this.registry],
    collect: () => this.inFlight.set(this.answering),
  });
  private readonly rpcs = new Counter({
    name: 'grpc_server_handled_total',
    help: 'gRPC calls answered, by method (its :path) and status code',
    labelNames: ['grpc_method', 'grpc_code'] as const,
    registers: [this.registry],
  });
  private readonly rpcLatency = new Histogram({
    name: 'grpc_server_handling_seconds',
    help: 'Time to answer a gRPC call, by method',
    labelNames: ['grpc_method'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  private readonly statements = new Histogram({
    name: 'db_statement_duration_seconds',
    help: 'Time of the SQL statements of our own, by where they ran: read, slow_read (off the request path) or write',
    labelNames: ['kind'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5],
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: 'auth_token_verifications_total',
    help: 'Bearer tokens checked: cached (verified before), verified (signature checked now) or refused',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly refusals = new Counter({
    name: 'auth_token_refusals_total',
    help: 'Bearer tokens refused, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private readonly process = processMetrics();

  requestStarted(): void {
    this.answering++;
  }

  /** by route, method and status: bounded, as templates, methods and statuses are */
  private readonly requestSeries = new Map<
    string,
    { count: Counter.Internal; time: Histogram.Internal<'route' | 'method'> }
  >();

  requestFinished(route: string, method: string, status: number, seconds: number): void {
    this.answering--;
    const series = seriesOf(this.requestSeries, `${route} ${method} ${status}`, () => ({
      count: this.requests.labels({ route, method, status }),
      time: this.latency.labels({ route, method }),
    }));
    series.count.inc();
    series.time.observe(seconds);
  }

  /** A gRPC call answered: code is the status's name (OK, NOT_FOUND, ...). */
  rpcFinished(rpc: string, code: string, seconds: number): void {
    this.rpcs.inc({ grpc_method: rpc, grpc_code: code });
    this.rpcLatency.observe({ grpc_method: rpc }, seconds);
  }

  private readonly statementSeries = new Map<string, Histogram.Internal<'kind'>>();

  statement(kind: 'read' | 'slow_read' | 'write', seconds: number): void {
    seriesOf(this.statementSeries, kind, () => this.statements.labels({ kind })).observe(seconds);
  }

  private readonly tokenSeries = new Map<string, Counter.Internal>();

  tokenChecked(outcome: TokenOutcome, reason?: string): void {
    seriesOf(this.tokenSeries, outcome, () => this.tokens.labels({ outcome })).inc();
    if (reason) this.refusals.inc({ reason });
  }

  /** Writes waiting for the connection (SQLite's group commit), read at each scrape. */
  watchWriteQueue(depth: () => number): void {
    new Gauge({
      name: 'db_write_queue_depth',
      help: 'Write transactions waiting for the database connection',
      registers: [this.registry],
      collect() {
        this.set(depth());
      },
    });
  }

  /** The delivery worker's counts and the outbox lag, read at each scrape. */
  watchDeliveries(worker: DeliveryStatus): void {
    new Counter({
      name: 'events_deliveries_total',
      help: 'Event delivery attempts since start, by outcome: delivered, retried (will be tried again) or failed',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [outcome, n] of Object.entries(worker.counts)) this.inc({ outcome }, n);
      },
    });
    new Gauge({
      name: 'events_outbox_lag_seconds',
      help: 'How long the oldest event not yet dispatched to subscriptions has waited',
      registers: [this.registry],
      async collect() {
        this.set((await worker.outboxLagMs()) / 1000);
      },
    });
  }

  async text(): Promise<string> {
    return `${await this.process.metrics()}\n${await this.registry.metrics()}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * GET /metrics. With `authorize`, only for a caller it lets through (METRICS=token: the table goes after
 * authentication, and authorize checks the principal's capability).
 */
export function metricsRoute(metrics: Metrics, authorize?: (principal: Principal) => Promise<void>): RouteTable {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    checkParameterNames(ctx.query);
    if (authorize) await authorize(ctx.state.principal as Principal);
    ctx.type = metrics.contentType;
    ctx.body = await metrics.text();
  });
  return { router, serves: (path) => path === '/metrics' };
}
