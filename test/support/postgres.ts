// A real PostgreSQL for the tests: the cluster npm test started (TEST_POSTGRES_URL, its maintenance database),
// or, when a test file runs alone, one started here for this process (scripts/tooling/postgres-cluster.mjs). Never
// skipped: a machine that cannot run PostgreSQL fails these tests.
import pg from 'pg';
// @ts-expect-error a plain ESM script without types: startCluster() resolves to { base, stop }
import { startCluster } from '../../scripts/tooling/postgres-cluster.mjs';

let own: Promise<{ base: string; stop: () => Promise<void> }> | undefined;
let made = 0;

async function maintenanceUrl(): Promise<string> {
  if (process.env.TEST_POSTGRES_URL) return process.env.TEST_POSTGRES_URL;
  own ??= startCluster({ endWithProcess: true }) as Promise<{ base: string; stop: () => Promise<void> }>;
  const cluster = await own!;
  return `${cluster.base}/postgres`;
}

/** A new, empty database made with the C collation; resolves to its URL. */
export async function newDatabase(): Promise<string> {
  const url = await maintenanceUrl();
  const name = `platform_${process.pid}_${Date.now()}_${++made}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create database ${name} template template0 encoding 'UTF8' lc_collate 'C' lc_ctype 'C'`);
  } finally {
    await client.end();
  }
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Whether this run's test servers go to PostgreSQL (npm test's second pass sets TEST_ENGINE=postgresql). */
export const onPostgres = () => process.env.TEST_ENGINE === 'postgresql';

/** Stops the cluster this process started, if it started one. */
export async function stopOwnCluster(): Promise<void> {
  if (own) await (await own).stop();
}
