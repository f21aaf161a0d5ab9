// npm run bench [-- --quick] [--json FILE]: our server against a hand-written baseline on the same SQLite file,
// side by side in one run (absolute numbers drift on shared machines; ratios hold).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { readBootstrap } from '../runtime/bootstrap.js';
import { TokenIssuer } from '../runtime/issuer.js';
import { parseCommandLine } from './cli-args.js';

const { values } = parseCommandLine({
  name: 'bench',
  usage: `
usage: npm run bench [-- --quick] [--json FILE]
Our server against a hand-written baseline on the same SQLite file, on a fresh data directory in .tmp/bench.
  --quick       2,000 repos, 2 s per scenario (about a minute); default 10,000 then 100,000 repos, 8 s each
  --json FILE   where the results go (default .tmp/bench-results.json)`,
  options: { quick: { type: 'boolean', default: false }, json: { type: 'string', default: '.tmp/bench-results.json' } },
});
const quick = values.quick!;
const sizes = quick ? [2000] : [10_000, 100_000];
const seconds = quick ? 2 : 8;
const connections = 10;
const work = join(process.cwd(), '.tmp', 'bench');
const dataDir = join(work, 'data');
const issuerUrl = 'http://bench.local';
const say = (line: string) => console.log(`[bench] ${line}`);

function start(
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; startedMs: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    env: { ...process.env, PORT: '0', LOG: 'off', ...env },
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (!m) return;
      const url = m[1];
      const poll = () =>
        fetch(`${url}/ping/v2/ping`).then(
          () => resolve({ child, url, startedMs: performance.now() - t0 }),
          () => setTimeout(poll, 20),
        );
      poll();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

function peakRssMb(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024);
}

async function stop(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  await new Promise<void>((r) => {
    child.once('exit', () => r());
    child.kill('SIGTERM');
  });
}

function importRepos(parent: string, from: number, count: number): void {
  const chunk = 10_000;
  for (let i = from; i < from + count; i += chunk) {
    const n = Math.min(chunk, from + count - i);
    const file = join(work, `repos-${i}.ndjson`);
    writeFileSync(
      file,
      Array.from({ length: n }, (_, k) =>
        JSON.stringify({ name: `repo-${String(i + k).padStart(7, '0')}`, description: `benchmark repo ${i + k}` }),
      ).join('\n'),
    );
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/import.ts', 'repos', file, '--parent', parent], {
      env: { ...process.env, DATA_DIR: dataDir },
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`import failed: ${r.stderr}`);
    say(`  imported repos ${i + n}/${from + count}`);
  }
}

interface Scenario {
  name: string;
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  body?: string;
}

async function load(url: string, s: Scenario, headers: Record<string, string>, over = connections) {
  const r = await autocannon({
    url: url + s.path,
    method: s.method,
    body: s.body,
    connections: over,
    duration: seconds,
    headers: { ...headers, ...(s.body ? { 'content-type': 'application/json' } : {}) },
  });
  if (r.non2xx > 0 || r.errors > 0)
    throw new Error(`${s.name} at ${url}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99 };
}

/** The five requests each server answers: page 1, a deep page, get, create and patch. */
function scenariosOf(list: string, deepPageToken: string, target: string, folder: string): Scenario[] {
  return [
    { name: 'list page 1', method: 'GET', path: list },
    { name: 'list deep page', method: 'GET', path: `${list}&page_token=${deepPageToken}` },
    { name: 'get', method: 'GET', path: `/registry/v2/repos/${target}` },
    {
      name: 'create',
      method: 'POST',
      path: `/registry/v2/repos/${folder}`,
      body: JSON.stringify({ name: 'bench-new', description: 'made by the benchmark' }),
    },
    {
      name: 'patch',
      method: 'PATCH',
      path: `/registry/v2/repos/${target}`,
      body: JSON.stringify({ description: 'patched by the benchmark' }),
    },
  ];
}

/**
 * Lists while creates run in the same scope (10 list connections, 2 create connections): every commit changes
 * what the list counts, so a count that is not kept up to date is a scan per list.
 */
async function mixed(url: string, list: string, create: Scenario, headers: Record<string, string>) {
  const [lists, creates] = await Promise.all([
    load(url, { name: 'list under creates', method: 'GET', path: list }, headers),
    load(url, create, headers, 2),
  ]);
  return { 'list under creates': lists, 'creates beside lists': creates };
}

/** The ratio of each row, and the table of every scenario, ours against the baseline. */
function printTable(rows: Record<string, unknown>[]): void {
  for (const row of rows) {
    const o = row.ours as { rps: number };
    const b = row.baseline as { rps: number };
    row.ratio = Math.round((o.rps / b.rps) * 100) / 100;
  }
  const pad = (v: unknown, n: number) => String(v).padStart(n);
  console.log('');
  console.log(
    `${'repos'.padEnd(8)}${'scenario'.padEnd(22)}${pad('ours r/s', 10)}${pad('base r/s', 10)}${pad('ratio', 7)}${pad('ours p50/p99 ms', 17)}${pad('base p50/p99 ms', 17)}`,
  );
  for (const r of rows as any[]) {
    console.log(
      `${String(r.size).padEnd(8)}${r.scenario.padEnd(22)}${pad(r.ours.rps, 10)}${pad(r.baseline.rps, 10)}${pad(r.ratio, 7)}${pad(`${r.ours.p50}/${r.ours.p99}`, 17)}${pad(`${r.baseline.p50}/${r.baseline.p99}`, 17)}`,
    );
  }
}

async function main(): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  say(
    `${quick ? 'quick' : 'full'} run: ${sizes.join(' and ')} repos, ${seconds} s per scenario, ${connections} connections`,
  );

  const t0 = performance.now();
  const gen = spawnSync(process.execPath, ['--import', 'tsx', 'generator/main.ts', '--out', join(work, 'generated')], {
    encoding: 'utf8',
  });
  if (gen.status !== 0) throw new Error(gen.stderr);
  const generateMs = Math.round(performance.now() - t0);
  say(`npm run generate: ${generateMs} ms (tsx start-up included)`);

  const env = { DATA_DIR: dataDir, ISSUER_URL: issuerUrl };
  const ours = await start(['server/main.ts'], env);
  say(`our server answered its first request ${Math.round(ours.startedMs)} ms after spawn (empty database)`);
  const { organization, owner } = readBootstrap(dataDir)!;
  const issuer = await TokenIssuer.open(dataDir, issuerUrl, issuerUrl);
  const auth = { authorization: `Bearer ${(await issuer.mint(owner)).token}` };
  const call = async (url: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return res.json() as Promise<any>;
  };
  const folder = (await call(ours.url, 'POST', `/iam/v2/groups/${organization}`, { name: 'folder' })).uid;
  const leaf = (await call(ours.url, 'POST', `/iam/v2/groups/${folder}`, { name: 'leaf' })).uid;
  const baseline = await start(['scripts/bench/baseline.ts'], { DATABASE_FILE: join(dataDir, 'platform.sqlite') });

  const rows: Record<string, unknown>[] = [];
  let loaded = 0;
  for (const size of sizes) {
    say(`loading ${size} repos under ${leaf} through npm run import`);
    importRepos(leaf, loaded, size - loaded);
    loaded = size;
    if (rows.length === 0) {
      const some = (await call(ours.url, 'GET', `/registry/v2/repos?uidp.children_of=${leaf}&page_size=100`)).repos;
      for (const r of some.slice(0, 20)) {
        for (const t of ['latest', 'stable', '1.0'])
          await call(ours.url, 'POST', `/registry/v2/tags/${r.uid}`, { name: t, digest: `sha256:${'a'.repeat(64)}` });
      }
    }
    const list = `/registry/v2/repos?uidp.descendants_of=${organization}&page_size=50`;
    const deepToken = async (url: string) =>
      (await call(url, 'GET', `${list}&skip=${Math.floor(size / 2)}`)).nextPageToken as string;
    const target = (await call(ours.url, 'GET', `${list}&skip=${Math.floor(size / 3)}`)).repos[0].uid;
    for (const [name, base] of [
      ['ours', ours.url],
      ['baseline', baseline.url],
    ] as const) {
      const scenarios = scenariosOf(list, await deepToken(base), target, folder);
      const results: Record<string, unknown> = {};
      for (const s of scenarios) {
        say(`${size} repos, ${name}: ${s.name}`);
        results[s.name] = await load(base, s, auth);
      }
      say(`${size} repos, ${name}: lists under creates`);
      const create = scenarios.find((s) => s.name === 'create')!;
      Object.assign(results, await mixed(base, list, create, auth));
      for (const [scenario, result] of Object.entries(results)) {
        const row =
          rows.find((x) => x.size === size && x.scenario === scenario) ?? rows[rows.push({ size, scenario }) - 1];
        row[name] = result;
      }
    }
  }
  const peak = { ours: peakRssMb(ours.child), baseline: peakRssMb(baseline.child) };
  await stop(ours.child);
  await stop(baseline.child);
  const cold = await start(['server/main.ts'], env);
  const coldStartMs = Math.round(cold.startedMs);
  await stop(cold.child);
  say(`cold start with ${loaded} repos: ${coldStartMs} ms`);

  printTable(rows);
  console.log(
    `generate ${generateMs} ms; cold start ${coldStartMs} ms; peak RSS ours ${peak.ours} MB, baseline ${peak.baseline} MB`,
  );
  const report = {
    date: new Date().toISOString(),
    quick,
    node: process.version,
    seconds,
    connections,
    generateMs,
    coldStartMs,
    peakRssMb: peak,
    rows,
  };
  mkdirSync(join(values.json!, '..'), { recursive: true });
  writeFileSync(values.json!, `${JSON.stringify(report, null, 2)}\n`);
  say(`results written to ${values.json}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`bench failed: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
