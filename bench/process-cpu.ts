// A process's CPU: what it used, from the kernel's accounting, and what it may use, held to a share through a
// cgroup of its own (the kernel's CFS quota), as if it ran on a machine of that size: on a small machine the
// instances, the database and the load generator share the same cores, and what a second instance adds for writes
// cannot show unless each instance has cores of its own.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const ticksPerSecond = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU the process has used so far, in clock ticks: user and system time of every thread. */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14 and stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

// A short period: a process that spends its quota waits at most the rest of it, not the 100 ms of the default.
const periodUs = 10_000;
const v2Root = '/sys/fs/cgroup';
const v1Root = '/sys/fs/cgroup/cpu';

/** Where CPU limits can be set here, or why not (an answer to show the user). */
function cgroupRoot(): { root: string; v2: boolean } | string {
  if (existsSync(join(v2Root, 'cgroup.controllers'))) {
    const controllers = readFileSync(join(v2Root, 'cgroup.controllers'), 'utf8');
    if (!controllers.split(/\s+/).includes('cpu')) return `the cgroup v2 hierarchy at ${v2Root} has no cpu controller`;
    return { root: v2Root, v2: true };
  }
  if (existsSync(join(v1Root, 'cpu.cfs_quota_us'))) return { root: v1Root, v2: false };
  return `no cgroup cpu controller at ${v2Root} or ${v1Root}`;
}

/** The limits made by this run, removed when it ends (a cgroup goes once its processes have exited). */
const made: string[] = [];
process.on('exit', () => {
  for (const dir of made.splice(0))
    try {
      rmdirSync(dir);
    } catch {
      // a process still in it (killed after this exit): left for the system to reap
    }
});

/**
 * Holds the process `pid` (every thread of it, and the processes it starts later) to `cores` of CPU. Throws,
 * saying why, where cgroups cannot be written (not root, or no cpu controller): the caller must not measure then.
 */
export function limitCpu(pid: number, cores: number, name: string): void {
  const where = cgroupRoot();
  if (typeof where === 'string')
    throw new Error(`cannot limit a server's CPU: ${where} (--instance-cores needs root and a cgroup cpu controller)`);
  const dir = join(where.root, `bench-${name.replace(/[^a-z0-9]+/gi, '-')}-${pid}`);
  try {
    if (where.v2) {
      const subtree = join(where.root, 'cgroup.subtree_control');
      if (!readFileSync(subtree, 'utf8').split(/\s+/).includes('cpu')) writeFileSync(subtree, '+cpu');
    }
    mkdirSync(dir);
    made.push(dir);
    const quota = Math.round(cores * periodUs);
    if (where.v2) writeFileSync(join(dir, 'cpu.max'), `${quota} ${periodUs}`);
    else {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(periodUs));
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
    }
    writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  } catch (e) {
    throw new Error(`cannot limit a server's CPU in ${dir}: ${(e as Error).message}`, { cause: e });
  }
}
