// TEST_TOPOLOGY=haproxy (npm test's third pass): a test server is three instances on one new PostgreSQL database
// behind HAProxy (Debian's package, scripts/tooling/haproxy.mjs) running the repository's haproxy.cfg with a third
// server line, balancing every request in turn, HTTP and gRPC on its one port. The first instance runs in this
// process (its issuer mints the tests' tokens, its data directory holds the bootstrap); the other two are processes
// started as npm start does, with the same environment. The tests get HAProxy's URL.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
// @ts-expect-error a plain ESM script without types: ensureHaproxy() returns the binary's path or throws why not
import { ensureHaproxy } from '../../scripts/tooling/haproxy.mjs';
import { endWithTests, exitOf, spawnServer, type ServerProcess } from './process.js';

/** Whether this run's test servers are three instances behind HAProxy. */
export const balanced = () => process.env.TEST_TOPOLOGY === 'haproxy';

export interface Balancer {
  /** where the tests connect: HAProxy */
  url: string;
  /** the instances' own URLs, the in-process one first */
  instances: string[];
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** haproxy.cfg with every api2 server line repeated for api3 (API3). */
function threeInstanceConfig(dir: string): string {
  const lines = readFileSync('haproxy.cfg', 'utf8').split('\n');
  const out = lines.flatMap((l) =>
    /^\s*server api2 /.test(l) ? [l, l.replaceAll('api2', 'api3').replaceAll('API2', 'API3')] : [l],
  );
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, out.join('\n'));
  return file;
}

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`not within ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts instances two and three with env (the first's: its database, data directory and ISSUER_URL, HAProxy's
 * URL on lbPort) and HAProxy in front of all three; first is the in-process instance, already migrated.
 */
export async function startBalancer(first: string, lbPort: number, env: Record<string, string>): Promise<Balancer> {
  const binary = ensureHaproxy() as string;
  const others: ServerProcess[] = [];
  let haproxy: ChildProcess | undefined;
  let output = '';
  const stop = async () => {
    const children = [haproxy, ...others.map((o) => o.child)].filter((c) => c !== undefined && c.exitCode === null);
    await Promise.all(children.map((c) => (c!.kill('SIGKILL'), exitOf(c!))));
  };
  try {
    others.push(...(await Promise.all([spawnServer({ ...env, PORT: '0' }), spawnServer({ ...env, PORT: '0' })])));
    const [api1, api2, api3] = [first, ...others.map((o) => o.url)].map((u) => new URL(u).host);
    haproxy = endWithTests(
      spawn(binary, ['-db', '-f', threeInstanceConfig(env.DATA_DIR)], {
        env: { PATH: process.env.PATH, LISTEN_PORT: String(lbPort), API1: api1, API2: api2, API3: api3 },
      }),
    );
    haproxy.stdout!.on('data', (d) => (output += d));
    haproxy.stderr!.on('data', (d) => (output += d));
    const lb = `http://127.0.0.1:${lbPort}`;
    await until('HAProxy answers', async () => (await fetch(`${lb}/readyz`)).status === 200).catch((e) => {
      throw new Error(`${e.message}\n${output}`);
    });
    return { url: lb, instances: [first, ...others.map((o) => o.url)], stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
