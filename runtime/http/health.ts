// /healthz: the process answers. /readyz: it can serve, each check bounded by a timeout so that a stuck database
// makes the probe fail fast rather than hang. Neither needs a token: an orchestrator's probes carry none.
import { Router } from './router.js';
import { ApiError } from '../model/errors.js';
import type { RouteTable } from './app.js';
import { checkParameterNames } from '../pipeline/validation.js';

/** One readiness check: resolves to what is wrong, or undefined when all is well. */
export type Check = () => Promise<string | undefined>;

export const healthPaths = new Set(['/healthz', '/readyz']);

async function outcome(check: Check, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([check().catch((e: unknown) => (e instanceof Error ? e.message : String(e))), late]);
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(checks: Record<string, Check>, timeoutMs = 1000): RouteTable {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    checkParameterNames(ctx.query);
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    checkParameterNames(ctx.query);
    const names = Object.keys(checks);
    const problems = await Promise.all(names.map((name) => outcome(checks[name], timeoutMs)));
    const failed = names.flatMap((name, i) => (problems[i] ? [{ type: name, description: problems[i] }] : []));
    if (failed.length > 0)
      throw new ApiError(
        'UNAVAILABLE',
        `Unavailable: not ready: ${failed.map((f) => `${f.type}: ${f.description}`).join('; ')}`,
        [{ '@type': 'type.googleapis.com/google.rpc.PreconditionFailure', violations: failed }],
      );
    ctx.body = { status: 'ok', checks: Object.fromEntries(names.map((name) => [name, 'ok'])) };
  });
  return { router, serves: (path) => healthPaths.has(path) };
}
