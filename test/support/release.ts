// The release as the container recipe makes and runs it: the Dockerfile's instructions (read from the file, so
// the tests run what it says), and the release folder built once per test process by `npm run build`'s script
// into a temporary directory outside the repository (no node_modules above it to fall back on).
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Instruction = [string, string];

/** The Dockerfile's stages, each a list of [instruction, arguments], continuation lines joined. */
export function dockerfileStages(): Instruction[][] {
  const lines = readFileSync('Dockerfile', 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
  const stages: Instruction[][] = [];
  for (const line of lines) {
    const [, instruction, rest] = /^\s*(\S+)\s+(.*)$/.exec(line)!;
    if (instruction === 'FROM') stages.push([]);
    stages[stages.length - 1].push([instruction, rest.trim()]);
  }
  return stages;
}

/** The arguments of every `instruction` of a stage. */
export const argumentsOf = (stage: Instruction[], instruction: string): string[] =>
  stage.filter(([i]) => i === instruction).map(([, a]) => a);

/** What the image (the last stage) runs: its ENV, CMD and HEALTHCHECK command. */
export function imageRecipe(): { env: Record<string, string>; cmd: string[]; healthcheck: string[] } {
  const stages = dockerfileStages();
  const image = stages[stages.length - 1];
  const env = Object.fromEntries(
    argumentsOf(image, 'ENV').flatMap((a) => a.split(/\s+/).map((kv) => kv.split('=') as [string, string])),
  );
  const cmd = JSON.parse(argumentsOf(image, 'CMD')[0]) as string[];
  const healthcheck = JSON.parse(/CMD\s+(\[.*\])$/.exec(argumentsOf(image, 'HEALTHCHECK')[0])![1]) as string[];
  return { env, cmd, healthcheck };
}

let built: { dir: string; output: string } | undefined;

/** The release folder, built on first use in this process (removed when it exits), and what the build printed. */
export function builtRelease(): { dir: string; output: string } {
  if (built) return built;
  const scratch = mkdtempSync(join(tmpdir(), 'platform-api-release-'));
  // Thousands of files: removed by a process of its own once this one exits, so that the run does not wait.
  process.once('exit', () => spawn('rm', ['-rf', scratch], { detached: true, stdio: 'ignore' }).unref());
  const dir = join(scratch, 'release');
  const r = spawnSync(process.execPath, ['scripts/tooling/release.mjs', '--out', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run build failed: ${r.stdout}${r.stderr}`);
  return (built = { dir, output: r.stdout });
}

export interface ReleaseProcess {
  child: ChildProcessWithoutNullStreams;
  /** http://127.0.0.1:port */
  url: string;
  output: () => string;
}

/**
 * Starts the release in dir as the image's CMD does: node with the CMD's arguments, in the folder, with env
 * alone (the image's ENV and what the caller adds) and a PATH without node_modules/.bin. Resolves once it
 * prints its listening line.
 */
export function startRelease(dir: string, env: Record<string, string>): Promise<ReleaseProcess> {
  const { env: imageEnv, cmd } = imageRecipe();
  const child = spawn(process.execPath, cmd.slice(1), {
    cwd: dir,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: dir, ...imageEnv, ...env },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the release did not start: ${out}`)), 30_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`the release exited with ${code}: ${out}`));
    };
    child.once('exit', onExit);
    child.stdout.on('data', function listening() {
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout.off('data', listening);
      resolve({ child, url: `http://127.0.0.1:${m[1]}`, output: () => out });
    });
  });
}
