// Cold start: from spawning the command `npm start` runs (package.json's "start", as npm runs it: in a shell,
// with node_modules/.bin on PATH, but without npm itself and the prestart check) to the first answered ping, and
// where the time goes: the phases of the server's start-up log line (runtime/operate/start-up.ts).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const startCommand: string = JSON.parse(readFileSync('package.json', 'utf8')).scripts.start;

export interface ColdStart {
  /** ms from spawning the command to the first answered ping */
  ms: number;
  /** the server's own phases; "outside" is the rest of ms: npm start's wrapper, spawning, the first request */
  phases: Record<string, number>;
}

/** One start on dataDir, measured, then stopped. */
export async function coldStart(dataDir: string, env: Record<string, string> = {}): Promise<ColdStart> {
  const started = performance.now();
  const child = spawn(startCommand, {
    shell: true,
    // Its own process group: the command's processes (a wrapper's child too) are stopped together.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PATH: `${resolve('node_modules/.bin')}:${process.env.PATH}`,
      PORT: '0',
      LOG: 'on',
      DATA_DIR: dataDir,
      ...env,
    },
  });
  let out = '';
  const waiting: (() => void)[] = [];
  child.stdout!.on('data', (d) => {
    out += d;
    for (const check of waiting) check();
  });
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const line = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(out);
        if (m) resolve(m);
      };
      waiting.push(check);
      check();
      void exited.then((code) => reject(new Error(`${startCommand} exited with ${code}: ${out}`)));
    });
  try {
    // The server prints the line once it listens: the first ping is answered, not retried.
    const [, url] = await line(/listening on (http:\/\/\S+)/);
    const ping = await fetch(`${url}/ping/v2/ping`);
    if (!ping.ok) throw new Error(`the first ping was answered ${ping.status}`);
    const ms = Math.round(performance.now() - started);
    const [, startUp] = await line(/"startUpMs":(\{[^}]*\})/);
    const phases = JSON.parse(startUp) as Record<string, number>;
    const inside = Object.values(phases).reduce((a, b) => a + b, 0);
    return { ms, phases: { ...phases, outside: ms - inside } };
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export interface ColdStarts {
  runsMs: number[];
  medianMs: number;
  /** each phase's median over the runs */
  phases: Record<string, number>;
}

/**
 * `runs` starts, each on a new data directory (fresh: the first start ever, which creates the schema and the
 * bootstrap records) or all on dataDir (started once before, unmeasured, if it is new).
 */
export async function coldStarts(
  runs: number,
  where: { fresh: string } | { dataDir: string },
  env: Record<string, string> = {},
): Promise<ColdStarts> {
  const results: ColdStart[] = [];
  if ('dataDir' in where) await coldStart(where.dataDir, env);
  for (let i = 0; i < runs; i++) {
    if ('dataDir' in where) {
      results.push(await coldStart(where.dataDir, env));
      continue;
    }
    mkdirSync(where.fresh, { recursive: true });
    const dataDir = mkdtempSync(join(where.fresh, 'data-'));
    results.push(await coldStart(dataDir, env));
    rmSync(dataDir, { recursive: true, force: true });
  }
  const names = [...new Set(results.flatMap((r) => Object.keys(r.phases)))];
  return {
    runsMs: results.map((r) => r.ms),
    medianMs: median(results.map((r) => r.ms)),
    phases: Object.fromEntries(names.map((n) => [n, median(results.map((r) => r.phases[n] ?? 0))])),
  };
}
