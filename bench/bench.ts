// npm run bench [-- --quick] [--json FILE]: our server against two hand-written baselines on the same SQLite
// file, side by side in one run (absolute numbers drift on shared machines; ratios hold): the floor (minimal Koa
// and node-sqlite3) and the strong baseline (Fastify and better-sqlite3, what a strong engineer would write).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { maxSkip } from '../runtime/lists/list-request.js';
import { ancestorsOf } from '../runtime/model/uid.js';
import { parseCommandLine } from '../scripts/cli-args.js';
import { coldStarts, startCommand, type ColdStarts } from './cold-start.js';
import { cpuTicks, limitCpu, ticksPerSecond } from './process-cpu.js';

const { values } = parseCommandLine({
  name: 'bench',
  usage: `
usage: npm run bench [-- --quick] [--repos N,N...] [--json FILE]
       npm run bench -- --cold-start [--json FILE]
       npm run bench -- --engines [--quick] [--repos N] [--instance-cores F] [--json FILE]
Our server against two hand-written baselines (the Koa floor and the Fastify strong baseline) on the same
SQLite file, on a fresh data directory in .tmp/bench: requests/s, latency and CPU microseconds per request.
  --quick       2,000 repos, 2 s per scenario (a couple of minutes); default 10,000 then 100,000 repos, 8 s each
  --repos N,... the sizes to load and measure, ascending (e.g. 1000000 for the scale run; loading takes minutes)
  --cold-start  only the cold start: npm start's command to the first answered ping, on fresh data directories
                and on an existing one, 7 runs each, medians and where the time goes
  --engines     our server on SQLite, on PostgreSQL, and as two instances on one PostgreSQL database (a
                throwaway cluster, scripts/tooling/postgres-cluster.mjs): requests/s and latency of each
  --instance-cores F  with --engines: each server instance held to F cores (a cgroup CPU quota; needs root), as
                if on a machine of its own, so that what a second instance adds shows on a small machine
  --json FILE   where the results go (default .tmp/bench-results.json)`,
  options: {
    quick: { type: 'boolean', default: false },
    'cold-start': { type: 'boolean', default: false },
    engines: { type: 'boolean', default: false },
    repos: { type: 'string' },
    'instance-cores': { type: 'string' },
    json: { type: 'string', default: '.tmp/bench-results.json' },
  },
});
const instanceCores = values['instance-cores'] === undefined ? undefined : Number(values['instance-cores']);
if (instanceCores !== undefined && !(instanceCores > 0 && instanceCores <= availableParallelism())) {
  console.error(
    `bench: --instance-cores takes the cores one server instance may use, above 0 and at most this machine's ${availableParallelism()}; got "${values['instance-cores']}"`,
  );
  process.exit(2);
}
if (instanceCores !== undefined && !values.engines) {
  console.error('bench: --instance-cores goes with --engines');
  process.exit(2);
}
// The baselines' packages live in bench/node_modules (npm run bench installs them on its first run): loaded
// only after the command line, so that --help and a wrong option answer without them.
const { default: autocannon } = await import('autocannon');
const quick = values.quick!;
const sizes = values.repos
  ? values.repos.split(',').map((n) => {
      if (!/^\d+$/.test(n) || Number(n) < 100) {
        console.error(`bench: --repos takes sizes of at least 100, comma-separated, ascending; got "${n}"`);
        process.exit(2);
      }
      return Number(n);
    })
  : quick
    ? [2000]
    : [10_000, 100_000];
const seconds = quick ? 2 : 8;
/**
 * Each scenario's seconds are split into rounds, the three servers taking turns in each: the speed of a shared
 * machine drifts by a third over minutes, and servers measured one after the other would be compared across it.
 */
const rounds = quick ? 2 : 4;
/** Unmeasured load before each measured scenario; longer for a server held to a share of a core. */
const warmUpSeconds = Math.round((quick ? 1 : 2) / Math.min(1, instanceCores ?? 1));
/** A held setup's warm-up of every scenario before any is measured: 4 s of a core's CPU each. */
const heldWarmUpSeconds = Math.ceil((quick ? 1 : 4) / Math.min(1, instanceCores ?? 1));
const connections = 10;
const work = join(process.cwd(), '.tmp', 'bench');
const dataDir = join(work, 'data');
const issuerUrl = 'http://bench.local';
const say = (line: string) => console.log(`[bench] ${line}`);

/** The servers started and not yet stopped: a failed run stops them too, rather than leaving them serving. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

/**
 * Every server runs as plain JavaScript on Node, as users run ours (npm start runs its start-up build): a
 * TypeScript loader in the process would cost each server CPU and memory of its own (about 40 MB of RSS).
 * The baselines are bundled by esbuild into bench/.build/, their packages left external: Node finds them from
 * there in bench/node_modules (koa, sqlite3, fastify) and in the project's node_modules (better-sqlite3, jose).
 */
async function plainScript(source: string): Promise<string> {
  if (source === 'ours') return 'scripts/start.mjs';
  const esbuild = await import('esbuild');
  const outfile = join('bench', '.build', source.replace(/^.*\//, '').replace(/\.ts$/, '.mjs'));
  await esbuild.build({
    entryPoints: [source],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'error',
  });
  return outfile;
}

async function start(
  source: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; startedMs: number }> {
  const script = await plainScript(source);
  const t0 = performance.now();
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, PORT: '0', LOG: 'off', ...env },
  });
  running.add(child);
  if (instanceCores !== undefined) limitCpu(child.pid!, instanceCores, source);
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
    child.once('exit', (code) => reject(new Error(`${source} exited with ${code}: ${out}`)));
  });
}

function peakRssMb(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024);
}

async function stop(child: ChildProcess): Promise<void> {
  running.delete(child);
  child.removeAllListeners('exit');
  await new Promise<void>((r) => {
    child.once('exit', () => r());
    child.kill('SIGTERM');
  });
}

/** A request with these headers, answered by its JSON body; an answer that is not 2xx stops the benchmark. */
function caller(auth: Record<string, string>) {
  return async (url: string, method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(url + path, {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
    return JSON.parse(text);
  };
}

/** A skip to that row, or to the API's largest skip (maxSkip) when it is further: 1,000,000 repos are past it. */
const skipTo = (row: number) => Math.min(Math.floor(row), maxSkip);

/**
 * The n-th repo of the benchmark. One in four has every optional field of a repo set, so the answers the
 * baselines are checked against hold each column a repo answer reads (lists and the get target include some).
 */
function benchmarkRepo(n: number): Record<string, unknown> {
  const repo = { name: `repo-${String(n).padStart(7, '0')}`, description: `benchmark repo ${n}` };
  if (n % 4 !== 0) return repo;
  return {
    ...repo,
    aliases: [`alias-${n}`],
    activeTags: ['latest', '1.0'],
    bundles: ['base'],
    catalogTier: 'CATALOG_TIER_BASE',
    sync_config: { source: `cgr.dev/bench/repo-${n}`, apkoOverlay: 'overlay' },
  };
}

/**
 * Writes the repos to one NDJSON file, a block at a time, and loads it with one npm run import; resolves to the
 * seconds the import took, its process's start included.
 */
async function importRepos(
  parent: string,
  from: number,
  count: number,
  env: Record<string, string> = { DATA_DIR: dataDir },
): Promise<number> {
  const file = join(work, `repos-${from}.ndjson`);
  const fd = openSync(file, 'w');
  for (let i = from; i < from + count; i += 10_000) {
    const lines = Array.from({ length: Math.min(10_000, from + count - i) }, (_, k) =>
      JSON.stringify(benchmarkRepo(i + k)),
    );
    writeSync(fd, `${lines.join('\n')}\n`);
  }
  closeSync(fd);
  // Waited for without blocking this process: a blocked event loop would not see the servers close idle
  // keep-alive connections meanwhile, and the first request after a load longer than their keep-alive timeout
  // (5 s) would go out on a closed one ("fetch failed: other side closed").
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/import.ts', 'repos', file, '--parent', parent], {
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const seconds = (performance.now() - started) / 1000;
  rmSync(file);
  if (status !== 0) throw new Error(`import failed: ${out}`);
  say(`  ${out.trim().split('\n').at(-1)}`);
  return seconds;
}

interface Scenario {
  name: string;
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  /** a function: a new body for every request (a create's name, unique under its parent) */
  body?: string | (() => string);
}

/** Names no create of this run has used: a repo's name is its natural key under its parent. */
let created = 0;
const newRepoName = () => `bench-new-${process.pid}-${++created}`;

async function load(url: string, s: Scenario, headers: Record<string, string>, over = connections, duration = seconds) {
  const { body } = s;
  const r = await autocannon({
    url: url + s.path,
    method: s.method,
    ...(typeof body === 'function'
      ? { requests: [{ setupRequest: (request: object) => ({ ...request, body: body() }) }] }
      : { body }),
    connections: over,
    duration,
    headers: { ...headers, ...(s.body ? { 'content-type': 'application/json' } : {}) },
  });
  if (r.non2xx > 0 || r.errors > 0)
    throw new Error(
      `${s.name} at ${url}: ${r.non2xx} non-2xx answers (by status: ${JSON.stringify(r.statusCodeStats)}), ${r.errors} errors`,
    );
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total };
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
      body: () => JSON.stringify({ name: newRepoName(), description: 'made by the benchmark' }),
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
async function mixed(url: string, list: string, create: Scenario, headers: Record<string, string>, duration: number) {
  const [lists, creates] = await Promise.all([
    load(url, { name: 'list under creates', method: 'GET', path: list }, headers, connections, duration),
    load(url, create, headers, 2, duration),
  ]);
  return { 'list under creates': lists, 'creates beside lists': creates };
}

// --- CPU per request, from the kernel's accounting: utime + stime of each server, in clock ticks
/** The owner's token from the token command: on PostgreSQL the keys are in the database, not in DATA_DIR. */
function ownerToken(env: Record<string, string>): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/token.ts'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`npm run token: ${r.stderr}`);
  return r.stdout.trim();
}

const usPerTick = 1e6 / ticksPerSecond;
/** How much of one core others may take during a scenario before its CPU figures are flagged. */
const othersAllowance = 0.1;

const processTicks = (child: ChildProcess) => cpuTicks(child.pid!);

/** Busy ticks of the whole machine, every core: all but idle and iowait (guest time is inside user). */
function machineBusyTicks(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return user + nice + system + irq + softirq + (steal ?? 0);
}

const benchUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/**
 * Runs a scenario against one server and says how much CPU that server spent on it, and how much of a core
 * processes other than the servers and this one (autocannon) took meanwhile: CPU they take is CPU the
 * measured server could not have, so the figures of that scenario are suspect.
 */
async function measure<T>(servers: ChildProcess[], server: ChildProcess, run: () => Promise<T>) {
  const allTicks = () => servers.reduce((n, c) => n + processTicks(c), 0);
  const before = { server: processTicks(server), all: allTicks(), bench: benchUs(), machine: machineBusyTicks() };
  const t0 = performance.now();
  const result = await run();
  const wallUs = (performance.now() - t0) * 1000;
  const serverUs = (processTicks(server) - before.server) * usPerTick;
  const accountedUs = (allTicks() - before.all) * usPerTick + (benchUs() - before.bench);
  const othersCores = ((machineBusyTicks() - before.machine) * usPerTick - accountedUs) / wallUs;
  return { result, serverUs, othersCores };
}

type Name = 'ours' | 'baseline' | 'strong';
const labels: Record<Name, string> = { ours: 'ours', baseline: 'floor', strong: 'strong' };
interface Server {
  name: Name;
  url: string;
  child: ChildProcess;
}
interface Run {
  list: string;
  target: string;
  folder: string;
  auth: Record<string, string>;
  size: number;
  servers: Server[];
  warnings: string[];
}

/** One load's figures as the table shows them: summed over the rounds of a scenario. */
interface Figures {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  cpuUs: number;
}

/** Adds up the rounds: requests per second over their whole time, p50 weighted by requests, the worst p99. */
function summed(loads: { result: Awaited<ReturnType<typeof load>>; serverUs: number }[], secondsEach: number): Figures {
  const requests = loads.reduce((n, l) => n + l.result.requests, 0);
  return {
    rps: Math.round(requests / (secondsEach * loads.length)),
    p50: Math.round(loads.reduce((n, l) => n + l.result.p50 * l.result.requests, 0) / requests),
    p99: Math.max(...loads.map((l) => l.result.p99)),
    requests,
    cpuUs: Math.round(loads.reduce((n, l) => n + l.serverUs, 0) / requests),
  };
}

/**
 * Every scenario against every server, each with the CPU it cost that server per request. The servers take turns
 * within each scenario (`rounds` of it), after a warm-up of each; the floor's writes are recounted after each of
 * its turns (recountAfterFloor).
 */
async function runScenarios(run: Run, deepTokens: Map<Name, string>, databaseFile: string) {
  const children = run.servers.map((s) => s.child);
  const secondsEach = seconds / rounds;
  const results = new Map<Name, Record<string, Figures>>(run.servers.map((s) => [s.name, {}]));
  // per server and scenario: others' CPU over its rounds, and the most of a core they took in any one round
  const othersUs = new Map<string, { us: number; wallUs: number; worst: number }>();
  const note = (server: Server, scenario: string, othersCores: number, wallUs: number) => {
    const key = `${run.size} repos, ${labels[server.name]}, ${scenario}`;
    const o = othersUs.get(key) ?? { us: 0, wallUs: 0, worst: 0 };
    othersUs.set(key, {
      us: o.us + othersCores * wallUs,
      wallUs: o.wallUs + wallUs,
      worst: Math.max(o.worst, othersCores),
    });
  };
  const turns = async (
    name: string,
    writes: boolean,
    warm: (server: Server) => Promise<unknown>,
    one: (server: Server) => Promise<Record<string, Awaited<ReturnType<typeof load>>>>,
  ) => {
    say(`${run.size} repos: ${name}, ${rounds} rounds of ${secondsEach} s, the servers in turn`);
    for (const server of run.servers) await warm(server);
    const taken = new Map<Name, { result: Record<string, Awaited<ReturnType<typeof load>>>; serverUs: number }[]>();
    for (let round = 0; round < rounds; round++) {
      // Each round starts with the next server: none always runs right after the same one (the floor's recount
      // warms the page cache for whoever follows it).
      const order = [
        ...run.servers.slice(round % run.servers.length),
        ...run.servers.slice(0, round % run.servers.length),
      ];
      for (const server of order) {
        const t0 = performance.now();
        const m = await measure(children, server.child, () => one(server));
        note(server, name, m.othersCores, (performance.now() - t0) * 1000);
        taken.set(server.name, [...(taken.get(server.name) ?? []), { result: m.result, serverUs: m.serverUs }]);
        if (writes && server.name === 'baseline') await recountAfterFloor(databaseFile, run.folder);
      }
    }
    for (const [serverName, loads] of taken) {
      // Loads run together in one turn (lists beside creates) share the server: its CPU is spread over both.
      const scenarios = Object.keys(loads[0].result);
      for (const scenario of scenarios) {
        const figures = summed(
          loads.map((l) => {
            const served = Object.values(l.result).reduce((n, r) => n + r.requests, 0);
            return { result: l.result[scenario], serverUs: (l.serverUs * l.result[scenario].requests) / served };
          }),
          secondsEach,
        );
        results.get(serverName)![scenario] = figures;
      }
    }
  };
  for (const s of scenariosOf(run.list, '', run.target, run.folder)) {
    // Each server reads its own deep page token: the floor's and the strong baseline's are their own.
    const of = (server: Server): Scenario =>
      s.name === 'list deep page' ? { ...s, path: `${run.list}&page_token=${deepTokens.get(server.name)}` } : s;
    // Warmed first, unmeasured: a server in use has compiled its code paths, and a benchmark of a few
    // seconds would otherwise count the compiler's work against the first scenario of each path.
    await turns(
      s.name,
      s.method !== 'GET',
      (server) => load(server.url, of(server), run.auth, connections, warmUpSeconds),
      async (server) => ({ [s.name]: await load(server.url, of(server), run.auth, connections, secondsEach) }),
    );
  }
  const create = scenariosOf(run.list, '', run.target, run.folder).find((s) => s.name === 'create')!;
  await turns(
    'lists under creates',
    true,
    async () => undefined,
    (server) => mixed(server.url, run.list, create, run.auth, secondsEach),
  );
  for (const [key, o] of othersUs) {
    // One disturbed round is enough to make a scenario's figures suspect: the average over four would hide it.
    if (o.worst <= othersAllowance) continue;
    const line =
      `warning: ${key}: other processes took up to ${o.worst.toFixed(2)} of a core in a round ` +
      `(${(o.us / o.wallUs).toFixed(2)} over its rounds); its figures are suspect`;
    run.warnings.push(line);
    say(line);
  }
  return results;
}

/**
 * The floor's creates do not keep the per-scope counts (runtime/storage/scope-counts.ts) that ours and the strong
 * baseline keep and read: after the floor has run, the scopes its creates touched (parent and above) are
 * counted again from the rows, so every server's totalCount stays exact on the shared file.
 */
async function recountAfterFloor(databaseFile: string, parent: string): Promise<void> {
  const db = new Database(databaseFile);
  db.pragma('busy_timeout = 10000');
  // The load generator stops sending at the end of a scenario, but the floor still commits the creates it had
  // received (up to one per connection): the rows must stop changing first, or those would go uncounted.
  const newest = db.prepare<[], { n: number | null }>('select max(rowid) as n from repos');
  for (let before = -1, now = newest.get()!.n ?? 0; now !== before; now = newest.get()!.n ?? 0) {
    before = now;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  const below = db.prepare<[string, string], { n: number }>(
    'select count(*) as n from repos where uid > ? and uid < ?',
  );
  const set = db.prepare(
    "insert into scope_counts (collection, scope, below, children) values ('repos', ?, ?, ?) " +
      'on conflict (collection, scope) do update set below = excluded.below, children = excluded.children',
  );
  const children = db.prepare<[string], { n: number }>('select count(*) as n from repos where parent_uid = ?');
  const roots = db.prepare<[], { n: number }>('select count(*) as n from repos where parent_uid is null');
  const all = db.prepare<[], { n: number }>('select count(*) as n from repos');
  // IMMEDIATE: the write lock first (waiting for the floor's last creates), so that no write can come between
  // the counts read and the counts written.
  db.transaction(() => {
    set.run('', all.get()!.n, roots.get()!.n);
    for (const scope of [parent, ...ancestorsOf(parent)])
      set.run(scope, below.get(`${scope}/`, `${scope}0`)!.n, children.get(scope)!.n);
  }).immediate();
  db.close();
}

/** Where two JSON texts first differ, with some text around it on each side. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  const around = (t: string) => t.slice(Math.max(0, i - 60), i + 60);
  return `at character ${i}:\n    ours:  …${around(a)}…\n    other: …${around(b)}…`;
}

/** The baselines must answer what ours answers, or the comparison means nothing. */
async function checkSameAnswers(
  call: (url: string, method: string, path: string) => Promise<any>,
  run: Run,
): Promise<void> {
  const answers = async (url: string) => {
    const page = await call(url, 'GET', run.list);
    return {
      get: JSON.stringify(await call(url, 'GET', `/registry/v2/repos/${run.target}`)),
      'list page 1 (repos and totalCount)': JSON.stringify({ repos: page.repos, totalCount: page.totalCount }),
    };
  };
  const [ours, ...others] = run.servers;
  const want = await answers(ours.url);
  for (const other of others) {
    const got = await answers(other.url);
    for (const [what, text] of Object.entries(want)) {
      const theirs = got[what as keyof typeof got];
      if (theirs !== text)
        throw new Error(
          `the ${labels[other.name]} baseline answers ${what} differently from ours ${firstDifference(text, theirs)}`,
        );
    }
  }
  say(`${run.size} repos: both baselines answer get and list page 1 with the same JSON as ours`);
}

const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

/** The table of every scenario: requests/s, ours against each baseline, CPU per request and latency. */
function printTable(rows: Record<string, any>[]): void {
  for (const row of rows) {
    row.ratio = ratio(row.ours.rps, row.baseline.rps);
    row.ratioStrong = ratio(row.ours.rps, row.strong.rps);
  }
  const pad = (v: unknown, n: number) => String(v).padStart(n);
  const names: Name[] = ['ours', 'baseline', 'strong'];
  console.log('');
  console.log(
    'repos'.padEnd(9) +
      'scenario'.padEnd(21) +
      names.map((n) => pad(`${labels[n]} r/s`, 11)).join('') +
      pad('o/floor', 8) +
      pad('o/strong', 9) +
      names.map((n) => pad(`${labels[n]} µs`, 10)).join('') +
      names.map((n) => pad(`${labels[n]} p50/p99`, 16)).join(''),
  );
  for (const r of rows) {
    console.log(
      String(r.size).padEnd(9) +
        r.scenario.padEnd(21) +
        names.map((n) => pad(r[n].rps, 11)).join('') +
        pad(r.ratio, 8) +
        pad(r.ratioStrong, 9) +
        names.map((n) => pad(r[n].cpuUs, 10)).join('') +
        names.map((n) => pad(`${r[n].p50}/${r[n].p99}`, 16)).join(''),
    );
  }
  console.log('r/s: requests per second; µs: CPU microseconds of the server per request (utime + stime)');
}

/** Groups, folders, repos and tags through our server and the import, then every server against them. */
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
  const ours = await start('ours', env);
  say(`our server answered its first request ${Math.round(ours.startedMs)} ms after spawn (empty database)`);
  const { organization, owner } = readBootstrap(dataDir)!;
  const issuer = await TokenIssuer.open(dataDir, issuerUrl, issuerUrl);
  const auth = { authorization: `Bearer ${(await issuer.mint(owner)).token}` };
  const call = caller(auth);
  const folder = (await call(ours.url, 'POST', `/iam/v2/groups/${organization}`, { name: 'folder' })).uid;
  const leaf = (await call(ours.url, 'POST', `/iam/v2/groups/${folder}`, { name: 'leaf' })).uid;
  const databaseFile = { DATABASE_FILE: join(dataDir, 'platform.sqlite') };
  const baseline = await start('bench/baseline.ts', databaseFile);
  const strong = await start('bench/strong-baseline.ts', { ...databaseFile, ...env });
  const servers: Server[] = [
    { name: 'ours', ...ours },
    { name: 'baseline', ...baseline },
    { name: 'strong', ...strong },
  ];

  const rows: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  let loaded = 0;
  for (const size of sizes) {
    say(`loading ${size} repos under ${leaf} through npm run import`);
    const loadSeconds = await importRepos(leaf, loaded, size - loaded);
    const megabytes = (statSync(join(dataDir, 'platform.sqlite')).size / 1024 / 1024).toFixed(0);
    say(
      `loaded ${size - loaded} repos in ${loadSeconds.toFixed(1)} s (${Math.round((size - loaded) / loadSeconds)} repos/s); database ${megabytes} MB`,
    );
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
      (await call(url, 'GET', `${list}&skip=${skipTo(size / 2)}`)).nextPageToken as string;
    // A repo with every optional field set: the get answer then holds every column a repo answer reads.
    const third: { uid: string; sync_config?: unknown }[] = (
      await call(ours.url, 'GET', `${list}&skip=${skipTo(size / 3)}`)
    ).repos;
    const target = (third.find((r) => r.sync_config !== undefined) ?? third[0]).uid;
    const run: Run = { list, target, folder, auth, size, servers, warnings };
    await checkSameAnswers(call, run);
    const deepTokens = new Map<Name, string>();
    for (const server of servers) deepTokens.set(server.name, await deepToken(server.url));
    const measured = await runScenarios(run, deepTokens, databaseFile.DATABASE_FILE);
    for (const server of servers) {
      for (const [scenario, result] of Object.entries(measured.get(server.name)!)) {
        const row =
          rows.find((x) => x.size === size && x.scenario === scenario) ?? rows[rows.push({ size, scenario }) - 1];
        row[server.name] = result;
      }
    }
  }
  const peak = Object.fromEntries(servers.map((s) => [s.name, peakRssMb(s.child)])) as Record<Name, number>;
  for (const s of servers) await stop(s.child);
  const coldStartMs = (await coldStarts(3, { dataDir }, { ISSUER_URL: issuerUrl })).medianMs;
  say(`cold start with ${loaded} repos: ${coldStartMs} ms (median of 3)`);

  printTable(rows);
  for (const line of warnings) console.log(line);
  console.log(
    `generate ${generateMs} ms; cold start ${coldStartMs} ms; peak RSS ours ${peak.ours} MB, floor ${peak.baseline} MB, strong ${peak.strong} MB`,
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
    warnings,
    rows,
  };
  mkdirSync(join(values.json!, '..'), { recursive: true });
  writeFileSync(values.json!, `${JSON.stringify(report, null, 2)}\n`);
  say(`results written to ${values.json}`);
}

/** The cold start alone: fresh data directories and an existing one, with where the time goes. */
async function coldStartOnly(): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  const runs = 7;
  say(`cold start: ${startCommand}, ${runs} runs each on fresh data directories and on an existing one`);
  const fresh = await coldStarts(runs, { fresh: join(work, 'fresh') });
  const existing = await coldStarts(runs, { dataDir });
  const row = (name: string, f: number, e: number) =>
    console.log(`${name.padEnd(22)}${String(f).padStart(8)}${String(e).padStart(10)}`);
  console.log('');
  console.log(`${'ms (median)'.padEnd(22)}${'fresh'.padStart(8)}${'existing'.padStart(10)}`);
  row('first answered ping', fresh.medianMs, existing.medianMs);
  for (const phase of Object.keys({ ...fresh.phases, ...existing.phases }))
    row(`  ${phase}`, fresh.phases[phase] ?? 0, existing.phases[phase] ?? 0);
  const runsOf = (c: ColdStarts) => [...c.runsMs].sort((a, b) => a - b).join(' ');
  console.log(`runs: fresh ${runsOf(fresh)}; existing ${runsOf(existing)}`);
  console.log('phases: each the median over the runs, so they need not add up to the median total');
  mkdirSync(join(values.json!, '..'), { recursive: true });
  writeFileSync(
    values.json!,
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, startCommand, fresh, existing }, null, 2)}\n`,
  );
  say(`results written to ${values.json}`);
}

/** A setup: one or more instances of a server on one database, and the env that reaches its data. */
interface Setup {
  name: string;
  urls: string[];
  /** every process serving the setup: its CPU is theirs together */
  children: ChildProcess[];
  env: Record<string, string>;
}

/** A scenario against every instance of a setup at once, the connections split between them. */
async function loadSetup(
  setup: Setup,
  s: Scenario,
  headers: Record<string, string>,
  over = connections,
  duration = seconds,
) {
  const each = await Promise.all(
    setup.urls.map((url) => load(url, s, headers, Math.max(1, Math.round(over / setup.urls.length)), duration)),
  );
  return {
    rps: each.reduce((n, r) => n + r.rps, 0),
    p50: Math.max(...each.map((r) => r.p50)),
    p99: Math.max(...each.map((r) => r.p99)),
    requests: each.reduce((n, r) => n + r.requests, 0),
  };
}

interface EngineRow {
  setup: string;
  scenario: string;
  rps: number;
  p50: number;
  p99: number;
  /** CPU of the setup's processes per request, µs (in the mixed scenario: over the lists and creates together) */
  cpuUs: number;
}

/** Every scenario against one setup, warmed first, with its processes' CPU per request. */
async function runSetup(setup: Setup, scenarios: Scenario[], list: string, auth: Record<string, string>) {
  const rows: EngineRow[] = [];
  const ticks = () => setup.children.reduce((n, c) => n + processTicks(c), 0);
  if (instanceCores !== undefined) {
    // A held server's compiler takes its share too: measured from its start, ours ran at half its later rate
    // for its first 15 s at 0.4 of a core, the peer (less code) for less. Every scenario first, unmeasured.
    say(`${setup.name}: warming each scenario ${heldWarmUpSeconds} s`);
    for (const s of scenarios) await loadSetup(setup, s, auth, connections, heldWarmUpSeconds);
  }
  for (const s of scenarios) {
    say(`${setup.name}: ${s.name}`);
    await loadSetup(setup, s, auth, connections, warmUpSeconds);
    const before = ticks();
    const r = await loadSetup(setup, s, auth);
    rows.push({
      setup: setup.name,
      scenario: s.name,
      ...r,
      cpuUs: Math.round(((ticks() - before) * usPerTick) / r.requests),
    });
  }
  say(`${setup.name}: lists under creates`);
  const create = scenarios.find((s) => s.name === 'create')!;
  const before = ticks();
  const [lists, creates] = await Promise.all([
    loadSetup(setup, { name: 'list under creates', method: 'GET', path: list }, auth),
    loadSetup(setup, create, auth, 2),
  ]);
  const cpuUs = Math.round(((ticks() - before) * usPerTick) / (lists.requests + creates.requests));
  rows.push(
    { setup: setup.name, scenario: 'list under creates', ...lists, cpuUs },
    { setup: setup.name, scenario: 'creates beside lists', ...creates, cpuUs },
  );
  return rows;
}

/**
 * Our server on each engine: SQLite; PostgreSQL, one instance and two on one database (the load split between
 * them as a balancer would); and the hand-written PostgreSQL peer (bench/pg-peer.ts), one and two instances, on
 * the same database in the same run. The cluster is durable (fsync and synchronous_commit on), as production
 * runs it. The same repos in each, loaded through npm run import.
 */
async function engines(): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const size = sizes[0];
  say(
    `engines: ${size} repos, ${seconds} s per scenario, ${connections} connections` +
      (instanceCores === undefined ? '' : `, each server instance held to ${instanceCores} cores`),
  );
  // @ts-expect-error a plain ESM script without types
  const { startCluster } = await import('../scripts/tooling/postgres-cluster.mjs');
  const cluster = await startCluster({ endWithProcess: true, durable: true });
  const databaseUrl: string = await cluster.createDatabase('bench');
  const pgDataDir = join(work, 'pg-data');
  const sqliteEnv = { DATA_DIR: dataDir, ISSUER_URL: issuerUrl };
  const pgEnv = { DATA_DIR: pgDataDir, ISSUER_URL: issuerUrl, DATABASE_URL: databaseUrl };
  const setups: Setup[] = [];
  for (const [name, env] of [
    ['SQLite', sqliteEnv],
    ['PostgreSQL', pgEnv],
  ] as const) {
    const one = await start('ours', env);
    setups.push({ name, urls: [one.url], children: [one.child], env });
  }
  const table: EngineRow[] = [];
  for (const setup of setups) {
    const dir = setup.env.DATA_DIR;
    const { organization } = readBootstrap(dir)!;
    const auth = { authorization: `Bearer ${ownerToken(setup.env)}` };
    const url = setup.urls[0];
    const call = caller(auth);
    const folder = (await call(url, 'POST', `/iam/v2/groups/${organization}`, { name: 'folder' })).uid as string;
    const leaf = (await call(url, 'POST', `/iam/v2/groups/${folder}`, { name: 'leaf' })).uid as string;
    say(`${setup.name}: loading ${size} repos through npm run import`);
    const loadSeconds = await importRepos(leaf, 0, size, setup.env);
    say(`${setup.name}: loaded in ${loadSeconds.toFixed(1)} s (${Math.round(size / loadSeconds)} repos/s)`);
    const list = `/registry/v2/repos?uidp.descendants_of=${organization}&page_size=50`;
    const target = (await call(url, 'GET', `${list}&skip=${skipTo(size / 3)}`)).repos[0].uid as string;
    const deepSkip = skipTo(size / 2);
    // Each server's own page token: another's means nothing to it (the peer's is the uid, ours is sealed).
    const scenariosAt = async (at: string) =>
      scenariosOf(list, (await call(at, 'GET', `${list}&skip=${deepSkip}`)).nextPageToken as string, target, folder);
    // Each setup started when its turn comes: an idle second instance would take work of the first's (its
    // delivery worker dispatches the first's events) without its CPU being counted.
    const variants: (() => Promise<Setup>)[] = [async () => setup];
    if (setup.name === 'PostgreSQL') {
      const peerEnv = { DATABASE_URL: databaseUrl, ISSUER_URL: issuerUrl, JWKS_URL: `${url}/.well-known/jwks.json` };
      variants.push(
        async () => {
          const second = await start('ours', pgEnv);
          return {
            ...setup,
            name: 'PostgreSQL, 2 instances',
            urls: [url, second.url],
            children: [setup.children[0], second.child],
          };
        },
        async () => {
          const peer = await start('bench/pg-peer.ts', peerEnv);
          await checkPeerAnswers(call, url, peer.url, list, target, deepSkip);
          return { name: 'pg peer', urls: [peer.url], children: [peer.child], env: peerEnv };
        },
      );
      variants.push(async () => {
        const peers = [await start('bench/pg-peer.ts', peerEnv), await start('bench/pg-peer.ts', peerEnv)];
        return {
          name: 'pg peer, 2 instances',
          urls: peers.map((p) => p.url),
          children: peers.map((p) => p.child),
          env: peerEnv,
        };
      });
    }
    for (const startVariant of variants) {
      const variant = await startVariant();
      table.push(...(await runSetup(variant, await scenariosAt(variant.urls[0]), list, auth)));
    }
  }
  for (const child of running) await stop(child);
  await cluster.stop();
  printEngines(table);
  mkdirSync(join(values.json!, '..'), { recursive: true });
  writeFileSync(
    values.json!,
    `${JSON.stringify({ date: new Date().toISOString(), size, seconds, instanceCores, table }, null, 2)}\n`,
  );
  say(`results written to ${values.json}`);
}

/** The peer must answer get and list page 1 as ours does on the same database, or the comparison means nothing. */
async function checkPeerAnswers(
  call: (url: string, method: string, path: string) => Promise<any>,
  ours: string,
  peer: string,
  list: string,
  target: string,
  deepSkip: number,
): Promise<void> {
  // A page token is each server's own: the list is compared by its repos and totalCount.
  const shown = (a: any) => JSON.stringify(a.repos ? { repos: a.repos, totalCount: a.totalCount } : a);
  for (const path of [`/registry/v2/repos/${target}`, list]) {
    const [want, got] = [shown(await call(ours, 'GET', path)), shown(await call(peer, 'GET', path))];
    if (want !== got)
      throw new Error(`the PostgreSQL peer answers ${path} differently from ours ${firstDifference(want, got)}`);
  }
  // The page after a skip, each through its own token.
  const skipped = `${list}&skip=${deepSkip}`;
  const [mine, its] = await Promise.all([call(ours, 'GET', skipped), call(peer, 'GET', skipped)]);
  const [want, got] = await Promise.all([
    call(ours, 'GET', `${list}&page_token=${mine.nextPageToken}`).then(shown),
    call(peer, 'GET', `${list}&page_token=${its.nextPageToken}`).then(shown),
  ]);
  if (want !== got)
    throw new Error(`the PostgreSQL peer answers a deep page differently from ours ${firstDifference(want, got)}`);
  say('the PostgreSQL peer answers get, list page 1 and a deep page with the same JSON as ours');
}

/** The table of every setup and scenario, and ours against the peer on PostgreSQL. */
function printEngines(table: EngineRow[]): void {
  const pad = (v: unknown, n: number) => String(v).padStart(n);
  console.log('');
  console.log(
    `${'setup'.padEnd(26)}${'scenario'.padEnd(22)}${pad('r/s', 8)}${pad('µs CPU/req', 12)}${pad('p50/p99 ms', 12)}`,
  );
  for (const r of table)
    console.log(
      `${r.setup.padEnd(26)}${r.scenario.padEnd(22)}${pad(r.rps, 8)}${pad(r.cpuUs, 12)}${pad(`${r.p50}/${r.p99}`, 12)}`,
    );
  const of = (setup: string, scenario: string) => table.find((r) => r.setup === setup && r.scenario === scenario)!;
  console.log('');
  console.log(
    `${'scenario'.padEnd(22)}${pad('ours/peer', 11)}${pad('2 inst/1 ours', 15)}${pad('2 inst/1 peer', 15)}${pad('PG/SQLite', 11)}`,
  );
  for (const { scenario } of table.filter((r) => r.setup === 'SQLite'))
    console.log(
      scenario.padEnd(22) +
        pad(ratio(of('PostgreSQL', scenario).rps, of('pg peer', scenario).rps), 11) +
        pad(ratio(of('PostgreSQL, 2 instances', scenario).rps, of('PostgreSQL', scenario).rps), 15) +
        pad(ratio(of('pg peer, 2 instances', scenario).rps, of('pg peer', scenario).rps), 15) +
        pad(ratio(of('PostgreSQL', scenario).rps, of('SQLite', scenario).rps), 11),
    );
}

(values['cold-start'] ? coldStartOnly() : values.engines ? engines() : main()).then(
  () => process.exit(0),
  (e) => {
    const cause = e instanceof Error && e.cause instanceof Error ? ` (${e.cause.message})` : '';
    console.error(`bench failed: ${e instanceof Error ? e.message : String(e)}${cause}`);
    process.exit(1);
  },
);
