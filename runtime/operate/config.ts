// Configuration from the environment; a bad value stops start-up with one line saying what to fix.
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultBlockedDomains, type EmailDomainPolicy } from '../access/email-domain.js';
import type { DeliveryConfig } from '../events/delivery-worker.js';
import type { OutboundPolicy } from '../access/outbound.js';
import { defaultEventLimits, type EventLimits } from '../events/quotas.js';
import type { Database, ReadLimits } from '../storage/store.js';
import { trustedProxies, type TrustedProxies } from './caller-address.js';
import { secretsKeys } from '../storage/secret-seal.js';
import { protectDataDir } from '../storage/data-dir.js';
import { ConfigError } from '../model/errors.js';

/** A bad setting: the server stops with its one line (beside the other errors, so storage can raise it). */
export { ConfigError };

export interface Config {
  host: string;
  port: number;
  /** gRPC is served on port; grpcPort serves it alone as well (0: a free port) */
  grpcPort?: number;
  dataDir: string;
  /** the SQLite file (DATA_DIR/platform.sqlite, or DATABASE_URL=sqlite:...) */
  databaseFile: string;
  /** the database the server uses: that file, or PostgreSQL (DATABASE_URL=postgres://...) */
  database: Database;
  log: boolean;
  /** iss of our tokens; undefined: the URL the server listens on */
  issuerUrl?: string;
  /** aud of our tokens; undefined: the issuer URL */
  audience?: string;
  /** slow clients: the whole request, its headers, and an idle keep-alive connection */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** connections open at once on the HTTP port, HTTP/1.1 and h2c (gRPC) together; beyond, new ones are closed */
  maxConnections: number;
  /** h2c (gRPC) connections: idle, age and keepalive limits, streams and memory per connection */
  grpcLimits: GrpcLimits;
  /** on SIGTERM, how long requests and rpcs in flight may take before their connections are cut */
  shutdownGraceMs: number;
  /** on SIGTERM, how long /readyz answers 503 while requests are still taken, before the port closes */
  drainMs: number;
  /** SECRETS_KEY: the keys that seal stored credentials (the first seals); undefined: DATA_DIR's key file */
  secretsKeys?: Buffer[];
  /** who may say, in X-Forwarded-For, which address a request comes from (TRUSTED_PROXIES); undefined: nobody */
  trustedProxies?: TrustedProxies;
  /** event delivery to subscriptions; undefined when EVENTS=off */
  events?: DeliveryConfig;
  /** per-organization quotas on subscriptions, outstanding deliveries and redrives (whether or not EVENTS is on) */
  eventLimits: EventLimits;
  /** /metrics: served to anyone, not at all, or to a caller holding CAP_METRICS_READ */
  metrics: 'open' | 'off' | 'token';
  /** origins allowed by CORS ('*': any); undefined: no CORS headers at all */
  corsOrigins?: string[];
  /** the largest request body (HTTP) or message (gRPC) */
  maxBodyBytes: number;
  /** requests per second per identity (an anonymous caller: per address), and the burst; undefined: no limit */
  rateLimit?: { perSecond: number; burst: number };
  /** whose verified emails name an organization by their domain (groups:lookupGroup) */
  emailDomains: EmailDomainPolicy;
  /** where event sinks and OIDC issuers may be: public addresses, and loopback or private ranges when allowed */
  outbound: OutboundPolicy;
  /** reads that may take long: their time, and how many may wait for the database */
  reads: ReadLimits;
  /** the most records a v1 list that does not page answers */
  v1ListMax: number;
  /** how long an identity's grants are used from the cache at most, when no change is heard */
  grantsCacheMs: number;
  /** how long a refresh token's family lives from its exchange (runtime/access/refresh-tokens.ts); 0: none issued */
  refreshTokenSeconds: number;
}

export interface GrpcLimits {
  /** a connection without an rpc for this long is closed */
  idleMs: number;
  /** a connection is told to go away after this long (±10 %), and cut maxAgeGraceMs later */
  maxAgeMs: number;
  maxAgeGraceMs: number;
  /** the server pings a connection this often, and cuts it when no answer comes within keepaliveTimeoutMs */
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
  /** rpcs open at once on one connection */
  maxStreams: number;
  /** memory one connection may hold (HTTP/2 state and unsent data); beyond, new rpcs are refused */
  sessionMemoryMb: number;
}

/** A setting the server reads from the environment, as `npm start -- --help` lists it. */
export interface Setting {
  name: string;
  /** its value when unset, as a person reads it; '' when unset means off or none */
  default: string;
  meaning: string;
}

/**
 * Every variable readConfig reads, in the order --help lists them: the one list of them. readConfig reads the
 * environment through it, so a variable read but not listed here stops the server at once (and every test).
 */
export const settings: readonly Setting[] = [
  { name: 'PORT', default: '8080', meaning: 'listen port for HTTP and gRPC (0: a free one)' },
  { name: 'GRPC_PORT', default: '', meaning: 'a second port serving gRPC alone (0: a free one)' },
  { name: 'HOST', default: '127.0.0.1', meaning: 'listen address (0.0.0.0: every interface)' },
  { name: 'DATA_DIR', default: './data', meaning: 'the SQLite database, signing keys and secrets' },
  { name: 'DATABASE_URL', default: '', meaning: 'sqlite:/path/file.sqlite, or postgres://user:password@host:port/db' },
  { name: 'ISSUER_URL', default: 'http://HOST:PORT', meaning: "iss of the server's tokens: its public URL" },
  { name: 'TOKEN_AUDIENCE', default: 'the issuer URL', meaning: "aud of the server's tokens" },
  { name: 'LOG', default: 'on', meaning: 'JSON lines on stdout, one per request (off: none)' },
  { name: 'METRICS', default: 'open', meaning: '/metrics for anyone (open), a token holding CAP_METRICS_READ, or off' },
  { name: 'CORS_ORIGINS', default: '', meaning: 'CORS for these origins (comma-separated), or * for any' },
  { name: 'MAX_BODY_BYTES', default: '1048576', meaning: 'the largest request body (HTTP) or message (gRPC)' },
  { name: 'RATE_LIMIT', default: 'off', meaning: 'requests per second per identity (anonymous: per address)' },
  { name: 'RATE_LIMIT_BURST', default: 'twice RATE_LIMIT', meaning: 'requests a caller may make at once' },
  { name: 'TRUSTED_PROXIES', default: '', meaning: 'proxies (addresses, networks) whose X-Forwarded-For is believed' },
  { name: 'MAX_CONNECTIONS', default: '1000', meaning: 'connections open at once, HTTP/1.1 and h2c together' },
  { name: 'REQUEST_TIMEOUT', default: '30', meaning: 'seconds a client has to send a whole request' },
  { name: 'HEADERS_TIMEOUT', default: '10', meaning: 'seconds a client has to send the request headers' },
  { name: 'KEEP_ALIVE_TIMEOUT', default: '5', meaning: 'seconds an idle keep-alive connection stays open' },
  { name: 'DRAIN_SECONDS', default: '5', meaning: 'on SIGTERM, seconds /readyz answers 503 while requests are taken' },
  { name: 'SHUTDOWN_GRACE', default: '10', meaning: 'on SIGTERM, seconds requests in flight have to finish' },
  { name: 'SECRETS_KEY', default: 'DATA_DIR/secrets.key', meaning: 'keys sealing stored credentials (base64)' },
  { name: 'REFRESH_TOKEN_SECONDS', default: '86400', meaning: "seconds one exchange's refresh tokens live; 0: none" },
  { name: 'READ_TIMEOUT_MS', default: '10000', meaning: 'the longest a read may run; past it 504' },
  { name: 'READ_QUEUE', default: '64', meaning: 'reads that may wait for the database; past it 503' },
  { name: 'V1_LIST_MAX', default: '5000', meaning: 'the most records a v1 list that does not page answers' },
  { name: 'GRANTS_CACHE_SECONDS', default: '30', meaning: "how long an identity's grants are cached at most" },
  { name: 'TRUSTED_EMAIL_ISSUERS', default: '', meaning: 'issuers whose verified emails find an organization' },
  { name: 'BLOCKED_EMAIL_DOMAINS', default: 'free mail', meaning: 'email domains that never name one (none: none)' },
  { name: 'OUTBOUND_ALLOW_LOOPBACK', default: 'off', meaning: 'on: event sinks and OIDC issuers may be on loopback' },
  { name: 'OUTBOUND_ALLOW_PRIVATE', default: 'off', meaning: 'on: they may be in private address ranges' },
  { name: 'EVENTS', default: 'on', meaning: 'deliver events to subscriptions (off: they wait in the outbox)' },
  { name: 'EVENTS_TIMEOUT', default: '10', meaning: 'seconds a sink has to answer a delivery' },
  { name: 'EVENTS_MAX_ATTEMPTS', default: '12', meaning: 'attempts before a delivery is FAILED' },
  { name: 'EVENTS_MAX_AGE_HOURS', default: '24', meaning: 'a delivery not accepted after this long is FAILED' },
  { name: 'EVENTS_RETRY_BASE_MS', default: '1000', meaning: 'the first retry waits up to this, each next twice' },
  { name: 'EVENTS_RETRY_MAX_MS', default: '600000', meaning: 'the longest wait between retries' },
  { name: 'EVENTS_CONCURRENCY', default: '16', meaning: 'deliveries in flight in all' },
  { name: 'EVENTS_PER_SINK', default: '4', meaning: 'deliveries in flight to one sink' },
  { name: 'EVENTS_POLL_MS', default: '200', meaning: 'how often the delivery worker looks for new events' },
  { name: 'EVENTS_DISPATCH_BATCH', default: '500', meaning: 'deliveries one dispatch transaction writes at most' },
  { name: 'EVENTS_RETENTION_HOURS', default: '168', meaning: 'delivered and failed deliveries are kept this long' },
  { name: 'EVENTS_MAX_SUBSCRIPTIONS', default: '100', meaning: 'subscriptions per organization' },
  { name: 'EVENTS_MAX_OUTSTANDING', default: '10000', meaning: 'PENDING deliveries per organization' },
  { name: 'EVENTS_REDRIVES_PER_HOUR', default: '10', meaning: 'deliveries:redrive calls per organization per hour' },
  { name: 'GRPC_IDLE_TIMEOUT', default: '300', meaning: 'seconds an h2c connection without an rpc stays open' },
  { name: 'GRPC_MAX_CONNECTION_AGE', default: '3600', meaning: 'seconds before an h2c connection is told to go' },
  { name: 'GRPC_MAX_CONNECTION_AGE_GRACE', default: '30', meaning: 'seconds it has then before it is cut' },
  { name: 'GRPC_KEEPALIVE_TIME', default: '60', meaning: "seconds between the server's pings on h2c" },
  { name: 'GRPC_KEEPALIVE_TIMEOUT', default: '20', meaning: 'seconds a ping answer may take' },
  { name: 'GRPC_MAX_STREAMS', default: '100', meaning: 'rpcs open at once on one h2c connection' },
  { name: 'GRPC_MAX_SESSION_MEMORY_MB', default: '32', meaning: 'memory one h2c connection may hold' },
  { name: 'EVENTS_ALLOW_PRIVATE_SINKS', default: '', meaning: 'retired: set, it stops the server (OUTBOUND_ALLOW_*)' },
];

/** The settings as --help prints them: a heading, then one line each, name, default and meaning in columns. */
export function settingsHelp(): string {
  const rows = [{ name: 'VARIABLE', default: 'DEFAULT', meaning: 'MEANING' }, ...settings];
  const width = Math.max(...rows.map((s) => s.name.length));
  const defaults = Math.max(...rows.map((s) => s.default.length));
  return rows.map((s) => `  ${s.name.padEnd(width)}  ${(s.default || '-').padEnd(defaults)}  ${s.meaning}`).join('\n');
}

/** The environment as readConfig may read it: a name the settings do not list is a mistake in this file. */
function listedOnly(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const names = new Set(settings.map((s) => s.name));
  return new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string' && !names.has(name))
        throw new Error(`runtime/operate/config.ts reads ${name}, which its settings table does not list`);
      return Reflect.get(target, name);
    },
  });
}

/** The issuer URL when none is configured: where the server listens. */
export function defaultIssuer(config: Config): string {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return config.issuerUrl ?? `http://${host}:${config.port}`;
}

/** A duration in whole seconds from the environment. */
function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name] ?? String(fallback);
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 3600)
    throw new ConfigError(`${name} must be a whole number of seconds from 1 to 3600, got "${text}"`);
  return Number(text) * 1000;
}

/** A whole number within bounds from the environment. */
function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name] ?? String(fallback);
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${text}"`);
  return Number(text);
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: 'on' | 'off'): boolean {
  const text = env[name] ?? fallback;
  if (!['on', 'off'].includes(text)) throw new ConfigError(`${name} must be on or off, got "${text}"`);
  return text === 'on';
}

/** Event delivery: retries, limits and retention (docs/events.md, "Guarantees and limits"). */
function eventsConfig(env: NodeJS.ProcessEnv, outbound: OutboundPolicy): DeliveryConfig | undefined {
  if (!onOff(env, 'EVENTS', 'on')) return undefined;
  const hour = 3_600_000;
  return {
    retry: {
      baseMs: wholeNumber(env, 'EVENTS_RETRY_BASE_MS', 1000, 1, hour),
      maxDelayMs: wholeNumber(env, 'EVENTS_RETRY_MAX_MS', 600_000, 1, 24 * hour),
      maxAttempts: wholeNumber(env, 'EVENTS_MAX_ATTEMPTS', 12, 1, 1000),
      maxAgeMs: wholeNumber(env, 'EVENTS_MAX_AGE_HOURS', 24, 1, 24 * 90) * hour,
    },
    timeoutMs: wholeNumber(env, 'EVENTS_TIMEOUT', 10, 1, 300) * 1000,
    retentionMs: wholeNumber(env, 'EVENTS_RETENTION_HOURS', 168, 1, 24 * 365) * hour,
    concurrency: wholeNumber(env, 'EVENTS_CONCURRENCY', 16, 1, 1000),
    perSink: wholeNumber(env, 'EVENTS_PER_SINK', 4, 1, 1000),
    pollMs: wholeNumber(env, 'EVENTS_POLL_MS', 200, 10, 60_000),
    outbound,
    dispatchBatch: wholeNumber(env, 'EVENTS_DISPATCH_BATCH', 500, 1, 100_000),
  };
}

/** EVENTS_MAX_SUBSCRIPTIONS, EVENTS_MAX_OUTSTANDING, EVENTS_REDRIVES_PER_HOUR (runtime/events/quotas.ts). */
function eventLimits(env: NodeJS.ProcessEnv): EventLimits {
  const d = defaultEventLimits;
  return {
    subscriptions: wholeNumber(env, 'EVENTS_MAX_SUBSCRIPTIONS', d.subscriptions, 1, 100_000),
    outstanding: wholeNumber(env, 'EVENTS_MAX_OUTSTANDING', d.outstanding, 1, 100_000_000),
    redrivesPerHour: wholeNumber(env, 'EVENTS_REDRIVES_PER_HOUR', d.redrivesPerHour, 1, 100_000),
  };
}

/** Where the data is, for messages: the SQLite file, or PostgreSQL's host, port and database (never a password). */
export function databaseName(database: Database): string {
  if (database.engine === 'sqlite') return database.file;
  const u = new URL(database.url);
  return `PostgreSQL ${u.hostname}:${u.port || 5432}${u.pathname}`;
}

/** CORS_ORIGINS: `*`, or origins (scheme://host[:port]) separated by commas. */
function corsOrigins(env: NodeJS.ProcessEnv): string[] | undefined {
  const text = env.CORS_ORIGINS?.trim();
  if (!text) return undefined;
  if (text === '*') return ['*'];
  return text.split(',').map((o) => {
    const origin = o.trim().replace(/\/$/, '');
    if (!/^https?:\/\/[^/\s,]+$/.test(origin) || new URL(origin).origin !== origin.toLowerCase())
      throw new ConfigError(`CORS_ORIGINS must be * or origins such as https://app.example.com, got "${o.trim()}"`);
    return origin.toLowerCase();
  });
}

/** TRUSTED_EMAIL_ISSUERS: issuer URLs, comma-separated; BLOCKED_EMAIL_DOMAINS: domains ("none" for none). */
function emailDomains(env: NodeJS.ProcessEnv): EmailDomainPolicy {
  const list = (text: string | undefined) =>
    (text ?? '')
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  const trustedIssuers = list(env.TRUSTED_EMAIL_ISSUERS).map((issuer) => {
    if (!/^https?:\/\/[^/\s,]+(\/\S*)?$/.test(issuer))
      throw new ConfigError(
        `TRUSTED_EMAIL_ISSUERS must be issuer URLs such as https://accounts.google.com, got "${issuer}"`,
      );
    return issuer;
  });
  const blocked = env.BLOCKED_EMAIL_DOMAINS?.trim();
  const blockedDomains =
    blocked === undefined || blocked === '' ? defaultBlockedDomains : blocked === 'none' ? [] : list(blocked);
  for (const d of blockedDomains)
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(d))
      throw new ConfigError(
        `BLOCKED_EMAIL_DOMAINS must be lower-case domains such as example.com, or none, got "${d}"`,
      );
  return { trustedIssuers, blockedDomains };
}

function metricsMode(env: NodeJS.ProcessEnv): Config['metrics'] {
  const text = env.METRICS ?? 'open';
  if (text !== 'open' && text !== 'off' && text !== 'token')
    throw new ConfigError(`METRICS must be open, off or token, got "${text}"`);
  return text;
}

/** The h2c connection limits (docs/transports.md, "gRPC"): without them a connection and its rpcs could stay forever. */
function grpcLimits(env: NodeJS.ProcessEnv): GrpcLimits {
  return {
    idleMs: seconds(env, 'GRPC_IDLE_TIMEOUT', 300),
    maxAgeMs: seconds(env, 'GRPC_MAX_CONNECTION_AGE', 3600),
    maxAgeGraceMs: seconds(env, 'GRPC_MAX_CONNECTION_AGE_GRACE', 30),
    keepaliveMs: seconds(env, 'GRPC_KEEPALIVE_TIME', 60),
    keepaliveTimeoutMs: seconds(env, 'GRPC_KEEPALIVE_TIMEOUT', 20),
    maxStreams: wholeNumber(env, 'GRPC_MAX_STREAMS', 100, 1, 10_000),
    sessionMemoryMb: wholeNumber(env, 'GRPC_MAX_SESSION_MEMORY_MB', 32, 1, 4096),
  };
}

/** RATE_LIMIT (requests per second per identity) and RATE_LIMIT_BURST (twice the rate unless set). */
function rateLimit(env: NodeJS.ProcessEnv): Config['rateLimit'] {
  if (env.RATE_LIMIT === undefined || env.RATE_LIMIT === 'off') {
    if (env.RATE_LIMIT_BURST !== undefined) throw new ConfigError('RATE_LIMIT_BURST needs RATE_LIMIT');
    return undefined;
  }
  const perSecond = wholeNumber(env, 'RATE_LIMIT', 0, 1, 1_000_000);
  return { perSecond, burst: wholeNumber(env, 'RATE_LIMIT_BURST', perSecond * 2, 1, 10_000_000) };
}

/** A PostgreSQL URL, checked for what a connection needs; an error never repeats the password. */
function postgresUrl(text: string): Database {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError('DATABASE_URL is not a URL: postgres://user:password@host:port/database');
  }
  if (!url.hostname || url.pathname.length <= 1)
    throw new ConfigError(
      `DATABASE_URL must name a host and a database (postgres://user:password@host:port/database), got host "${url.hostname}" and no database`,
    );
  return { engine: 'postgresql', url: text };
}

function portOf(env: NodeJS.ProcessEnv, name: string, fallback?: string): number | undefined {
  const text = env[name] ?? fallback;
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) > 65535)
    throw new ConfigError(`${name} must be a number from 0 to 65535, got "${text}"`);
  return Number(text);
}

/** Where event sinks and OIDC issuers may be (runtime/access/outbound.ts). */
function outboundPolicy(env: NodeJS.ProcessEnv): OutboundPolicy {
  if (env.EVENTS_ALLOW_PRIVATE_SINKS !== undefined)
    throw new ConfigError(
      'EVENTS_ALLOW_PRIVATE_SINKS is replaced by OUTBOUND_ALLOW_PRIVATE (and OUTBOUND_ALLOW_LOOPBACK)',
    );
  return {
    allowLoopback: onOff(env, 'OUTBOUND_ALLOW_LOOPBACK', 'off'),
    allowPrivate: onOff(env, 'OUTBOUND_ALLOW_PRIVATE', 'off'),
  };
}

export function readConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const env = listedOnly(environment);
  const port = portOf(env, 'PORT', '8080')!;
  const grpcPort = portOf(env, 'GRPC_PORT');
  const host = env.HOST ?? '127.0.0.1';
  if (host.trim() === '') throw new ConfigError('HOST must not be empty');
  const dataDir = resolve(env.DATA_DIR ?? './data');
  let databaseFile = resolve(dataDir, 'platform.sqlite');
  let database: Database = { engine: 'sqlite', file: databaseFile };
  if (env.DATABASE_URL && /^postgres(ql)?:/.test(env.DATABASE_URL)) database = postgresUrl(env.DATABASE_URL);
  else if (env.DATABASE_URL) {
    const m = /^sqlite:(?:\/\/)?(.+)$/.exec(env.DATABASE_URL);
    if (!m)
      throw new ConfigError(
        'DATABASE_URL must look like sqlite:/path/to/file.sqlite or postgres://user:password@host:port/database',
      );
    databaseFile = resolve(m[1]);
    database = { engine: 'sqlite', file: databaseFile };
  }
  const logText = env.LOG ?? 'on';
  if (!['on', 'off'].includes(logText)) throw new ConfigError(`LOG must be on or off, got "${logText}"`);
  const issuerUrl = env.ISSUER_URL?.replace(/\/+$/, '');
  if (issuerUrl !== undefined && !/^https?:\/\/[^/\s]+(\/\S*)?$/.test(issuerUrl))
    throw new ConfigError(`ISSUER_URL must be an http(s) URL, got "${env.ISSUER_URL}"`);
  // As a public server would: headers within 10 s, the whole request within 30 s, idle connections kept 5 s.
  const requestTimeoutMs = seconds(env, 'REQUEST_TIMEOUT', 30);
  const headersTimeoutMs = seconds(env, 'HEADERS_TIMEOUT', 10);
  if (headersTimeoutMs > requestTimeoutMs)
    throw new ConfigError('HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT');
  const keepAliveTimeoutMs = seconds(env, 'KEEP_ALIVE_TIMEOUT', 5);
  const outbound = outboundPolicy(env);
  const proxies = env.TRUSTED_PROXIES?.trim();
  return {
    host,
    port,
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    dataDir,
    databaseFile,
    database,
    log: logText === 'on',
    issuerUrl,
    audience: env.TOKEN_AUDIENCE || undefined,
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs,
    maxConnections: wholeNumber(env, 'MAX_CONNECTIONS', 1000, 1, 1_000_000),
    grpcLimits: grpcLimits(env),
    drainMs: wholeNumber(env, 'DRAIN_SECONDS', 5, 0, 3600) * 1000,
    shutdownGraceMs: seconds(env, 'SHUTDOWN_GRACE', 10),
    ...(proxies ? { trustedProxies: trustedProxies(proxies) } : {}),
    ...(env.SECRETS_KEY ? { secretsKeys: secretsKeys(env.SECRETS_KEY) } : {}),
    events: eventsConfig(env, outbound),
    eventLimits: eventLimits(env),
    metrics: metricsMode(env),
    corsOrigins: corsOrigins(env),
    maxBodyBytes: wholeNumber(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    rateLimit: rateLimit(env),
    emailDomains: emailDomains(env),
    outbound,
    reads: {
      timeoutMs: wholeNumber(env, 'READ_TIMEOUT_MS', 10_000, 1, 600_000),
      queue: wholeNumber(env, 'READ_QUEUE', 64, 1, 100_000),
    },
    v1ListMax: wholeNumber(env, 'V1_LIST_MAX', 5000, 1, 1_000_000),
    grantsCacheMs: seconds(env, 'GRANTS_CACHE_SECONDS', 30),
    refreshTokenSeconds: wholeNumber(env, 'REFRESH_TOKEN_SECONDS', 86_400, 0, 30 * 86_400),
  };
}

/**
 * Creates the data directory if need be (0700, its files 0600: runtime/storage/data-dir.ts) and proves it writable
 * by writing into it (as root, permission bits say nothing), so that a bad DATA_DIR stops a command with one line
 * instead of failing deep inside. Answers a warning for a directory others may enter.
 */
export function ensureDataDir(config: Config): string | undefined {
  const probe = join(config.dataDir, `.writable-${process.pid}`);
  try {
    const warning = protectDataDir(config.dataDir);
    writeFileSync(probe, '');
    rmSync(probe);
    return warning;
  } catch (e) {
    throw new ConfigError(
      `DATA_DIR=${config.dataDir} is not writable: ${(e as Error).message}; set DATA_DIR to a writable directory`,
    );
  }
}
