// GET /metrics, the Prometheus text of runtime/operate/metrics.ts, as one of the HTTP routes.
import { Router } from './router.js';
import type { Principal } from '../access/authorization.js';
import type { RouteTable } from './app.js';
import type { Metrics } from '../operate/metrics.js';
import { checkParameterNames } from '../pipeline/validation.js';

/**
 * GET /metrics. With `authorize`, only for a caller it lets through (METRICS=token: the table goes after
 * authentication, and authorize checks the principal's capability).
 */
export function metricsRoute(metrics: Metrics, authorize?: (principal: Principal) => Promise<void> | void): RouteTable {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    checkParameterNames(ctx.query);
    if (authorize) await authorize(ctx.state.principal as Principal);
    ctx.type = metrics.contentType;
    ctx.body = await metrics.text();
  });
  return { router, serves: (path) => path === '/metrics' };
}
