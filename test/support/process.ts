// Runs the project's real commands (server, import) as child processes.
import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';

/**
 * Servers and proxies the tests started and that have not exited: killed when this process exits or is stopped by
 * SIGINT or SIGTERM, so a test file that ends early (a hook throwing, uvu exiting) leaves none of them serving.
 */
const running = new Set<ChildProcess>();
let killsAtExit = false;

/** Kills the child when this process exits, if it is still running then. */
export function endWithTests<C extends ChildProcess>(child: C): C {
  if (!killsAtExit) {
    killsAtExit = true;
    const killAll = () => {
      for (const c of running) c.kill('SIGKILL');
    };
    process.once('exit', killAll);
    // A test process stopped by a signal runs no 'exit' handler: these kill the children, then stop it as the
    // signal would have.
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => {
        killAll();
        process.kill(process.pid, signal);
      });
  }
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

export interface ScriptResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a script to completion without blocking this process (an in-process server keeps answering). */
export function runScript(script: string, args: string[], env: Record<string, string>): Promise<ScriptResult> {
  return outcome(spawn(process.execPath, ['--import', 'tsx', script, ...args], { env: { ...process.env, ...env } }));
}

/** A child's exit status and everything it printed, once it has finished. */
export function outcome(child: ChildProcessWithoutNullStreams): Promise<ScriptResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * Starts the server as npm start does (from its build) and resolves once it prints its listening line. Loopback
 * sinks and issuers are allowed (the tests' own listen there), and SIGTERM stops it without a drain (no load
 * balancer to tell), unless env says otherwise. With `fdLimit` it runs under that descriptor limit (ulimit -n),
 * the node process itself being the child.
 */
export function spawnServer(env: Record<string, string>, fdLimit?: number): Promise<ServerProcess> {
  const options = { env: { ...process.env, LOG: 'off', OUTBOUND_ALLOW_LOOPBACK: 'on', DRAIN_SECONDS: '0', ...env } };
  const child = endWithTests(
    fdLimit === undefined
      ? spawn(process.execPath, ['scripts/start.mjs'], options)
      : spawn('bash', ['-c', `ulimit -n ${fdLimit} && exec "$0" scripts/start.mjs`, process.execPath], options),
  );
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${out}`)), 20000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], output: () => out });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code}: ${out}`));
    });
  });
}

export function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
