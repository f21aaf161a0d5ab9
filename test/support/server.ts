// A real server on a free loopback port with its own data directory, and a small JSON client for it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import pg from 'pg';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfig } from '../../runtime/operate/config.js';
import type { Database } from '../../runtime/storage/store.js';
import { newDatabase, onPostgres } from './postgres.js';
import { balanced, freePort, startBalancer, type Balancer } from './balanced.js';
import { readBootstrap, type Bootstrap } from '../../runtime/access/bootstrap.js';
import { startServer, type GeneratedParts, type RunningServer } from '../../server/server.js';
import type { TokenIssuer } from '../../runtime/access/issuer.js';
import type { StoredKey } from '../../runtime/access/signing-keys.js';

export interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

export interface TestServer {
  /** where the tests connect: the server, or HAProxy in front of three (TEST_TOPOLOGY=haproxy) */
  url: string;
  /** the instances' own URLs: this one, or the three behind HAProxy */
  instances: string[];
  dataDir: string;
  /** the server's database: its SQLite file, or its own PostgreSQL database (TEST_ENGINE=postgresql) */
  database: Database;
  /** what a CLI run against this server's data needs: DATA_DIR, and DATABASE_URL on PostgreSQL */
  env: Record<string, string>;
  /** a token of the owner made on first start */
  token: string;
  bootstrap: Bootstrap;
  /** A really signed token of this server for any subject. */
  mint(subject: string): Promise<string>;
  /** The server's issuer (tokens with other audiences and claims). */
  issuer: TokenIssuer;
  /** The server's signing keys, oldest first: DATA_DIR's file, or on PostgreSQL the database's row. */
  signingKeys(): Promise<StoredKey[]>;
  /** The statements the server's store keeps prepared. */
  statementsKept(): Promise<number>;
  /** A request as the owner, unless headers set another authorization (or none: '') */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  stop(): Promise<void>;
}

/**
 * env: configuration beyond the defaults (EVENTS_RETRY_BASE_MS=...). The tests' sinks and issuers listen on
 * loopback, so OUTBOUND_ALLOW_LOOPBACK is on unless env says off (the tests of the refusal). With TEST_ENGINE=postgresql (npm test's second
 * pass) each server gets a new PostgreSQL database of its own (test/support/postgres.ts); scripts the tests run
 * against it take `env`. With TEST_TOPOLOGY=haproxy as well (the third pass) the server is three instances on its
 * database behind HAProxy (test/support/balanced.ts), and `url` is HAProxy's; `generated` cannot be given then.
 */
export async function startTestServer(
  generated?: GeneratedParts,
  env: Record<string, string> = {},
): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-test-'));
  const scriptEnv: Record<string, string> = { DATA_DIR: dataDir };
  if (onPostgres() || balanced()) scriptEnv.DATABASE_URL = await newDatabase();
  // The instances' tokens name HAProxy, whichever instance signed them.
  const lbPort = balanced() ? await freePort() : undefined;
  if (lbPort !== undefined) {
    if (generated)
      throw new Error('TEST_TOPOLOGY=haproxy runs the generated API only: the other instances are processes');
    scriptEnv.ISSUER_URL = `http://127.0.0.1:${lbPort}`;
  }
  const config = readConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG: 'off',
    OUTBOUND_ALLOW_LOOPBACK: 'on',
    ...scriptEnv,
    ...env,
  });
  const server: RunningServer = await startServer(config, generated);
  let balancer: Balancer | undefined;
  if (lbPort !== undefined)
    balancer = await startBalancer(server.url, lbPort, { OUTBOUND_ALLOW_LOOPBACK: 'on', ...scriptEnv, ...env }).catch(
      async (e) => {
        await server.close();
        throw e;
      },
    );
  const url = balancer?.url ?? server.url;
  // Where the server keeps its data: env may name another server's, to share its database.
  const bootstrap = readBootstrap(config.dataDir)!;
  const token = (await server.issuer.mint(bootstrap.owner)).token;
  return {
    url,
    instances: balancer?.instances ?? [server.url],
    dataDir,
    database: config.database,
    env: scriptEnv,
    token,
    bootstrap,
    mint: async (subject) => (await server.issuer.mint(subject)).token,
    issuer: server.issuer,
    signingKeys: () => storedKeys(config.database, config.dataDir),
    statementsKept: () => server.statementsKept(),
    async call(method, path, body, headers = {}) {
      const h: Record<string, string> = { authorization: `Bearer ${token}`, ...headers };
      if (h.authorization === '') delete h.authorization;
      const init: RequestInit = { method, headers: h };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + path, init);
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: tests assert on the text
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async stop() {
      await balancer?.stop();
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The keys as the server stores them (SECRETS_KEY unset here: the database's row is not sealed). */
async function storedKeys(database: Database, dataDir: string): Promise<StoredKey[]> {
  if (database.engine === 'sqlite') return JSON.parse(readFileSync(join(dataDir, 'signing-keys.json'), 'utf8'));
  const client = new pg.Client(database.url);
  await client.connect();
  try {
    const { rows } = await client.query("select value from server_state where name = 'signing-keys'");
    return JSON.parse(rows[0].value);
  } finally {
    await client.end();
  }
}

/** Creates a root group (organization) and returns its uid. */
export async function createOrg(s: TestServer, name = 'org'): Promise<string> {
  const r = await s.call('POST', '/iam/v2/groups', { name });
  if (r.status !== 200) throw new Error(`cannot create an organization: ${JSON.stringify(r.body)}`);
  return r.body.uid;
}
