// The server's Prometheus metrics (prom-client), in a registry of its own: requests by route template, method and
// status, their latency and how many are in flight; statement time and the write queue; token verifications;
// event deliveries; the process. Labels take only bounded values (templates, never paths holding uids).
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { CounterFamily, HistogramFamily } from './metric-series.js';

/** What the delivery worker tells: its counts since start, and how long the oldest undispatched event has waited. */
export interface DeliveryStatus {
  counts: { delivered: number; retried: number; failed: number };
  outboxLagMs(): Promise<number>;
}

export type TokenOutcome = 'cached' | 'verified' | 'refused';

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
  private readonly requests = new CounterFamily(
    'http_requests_total',
    'HTTP requests answered, by route template, method and status',
    ['route', 'method', 'status'],
  );
  private readonly latency = new HistogramFamily(
    'http_request_duration_seconds',
    'Time to answer an HTTP request, by route template and method',
    ['route', 'method'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  );
  /** counted in a plain number, read at each scrape */
  private answering = 0;
  private readonly inFlight: Gauge = new Gauge({
    name: 'http_requests_in_flight',
    help: 'HTTP requests being answered',
    registers: [this.registry],
    collect: () => this.inFlight.set(this.answering),
  });
  private readonly rpcs = new CounterFamily(
    'grpc_server_handled_total',
    'gRPC calls answered, by method (its :path) and status code',
    ['grpc_method', 'grpc_code'],
  );
  private readonly rpcLatency = new HistogramFamily(
    'grpc_server_handling_seconds',
    'Time to answer a gRPC call, by method',
    ['grpc_method'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  );
  private readonly statements = new HistogramFamily(
    'db_statement_duration_seconds',
    'Time of the SQL statements of our own, by where they ran: read, slow_read (off the request path) or write',
    ['kind'],
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5],
  );
  private readonly tokens = new CounterFamily(
    'auth_token_verifications_total',
    'Bearer tokens checked: cached (verified before), verified (signature checked now) or refused',
    ['outcome'],
  );
  private readonly refusals = new CounterFamily('auth_token_refusals_total', 'Bearer tokens refused, by reason', [
    'reason',
  ]);
  /** the families above, written after prom-client's at each scrape */
  private readonly families = [
    this.requests,
    this.latency,
    this.rpcs,
    this.rpcLatency,
    this.statements,
    this.tokens,
    this.refusals,
  ];

  private readonly process = processMetrics();

  requestStarted(): void {
    this.answering++;
  }

  /** by route, method and status: bounded, as templates, methods and statuses are */
  requestFinished(route: string, method: string, status: number, seconds: number): void {
    this.answering--;
    this.requests.at([route, method, status]).inc();
    this.latency.at([route, method]).observe(seconds);
  }

  /** A gRPC call answered: code is the status's name (OK, NOT_FOUND, ...). */
  rpcFinished(rpc: string, code: string, seconds: number): void {
    this.rpcs.at([rpc, code]).inc();
    this.rpcLatency.at([rpc]).observe(seconds);
  }

  statement(kind: 'read' | 'slow_read' | 'write', seconds: number): void {
    this.statements.at([kind]).observe(seconds);
  }

  tokenChecked(outcome: TokenOutcome, reason?: string): void {
    this.tokens.at([outcome]).inc();
    if (reason) this.refusals.at([reason]).inc();
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

  /** Write transactions run again after losing a race, and those answered ABORTED (PostgreSQL), read at each scrape. */
  watchLostRaces(lost: () => { serialization: number; deadlock: number; aborted: number }): void {
    new Counter({
      name: 'db_write_retries_total',
      help: 'Write transactions run again after a serialization failure or a deadlock, and those answered ABORTED after the last run, by outcome',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [outcome, n] of Object.entries(lost())) this.inc({ outcome }, n);
      },
    });
  }

  /** Times the grants caches were emptied (a grant changed, here or in another process), read at each scrape. */
  watchAccessChanges(changes: () => number): void {
    new Counter({
      name: 'grants_cache_invalidations_total',
      help: 'Times the cached grants were dropped: a role binding, a role, an identity or a group changed, or changes from other instances may have been missed',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(changes());
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
    const own = this.families.map((f) => f.render()).join('\n');
    return `${await this.process.metrics()}\n${await this.registry.metrics()}\n${own}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
