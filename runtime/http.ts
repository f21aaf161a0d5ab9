// The Koa application: request id and log, errors, body, authenticate, then the generated routes.
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import type Router from '@koa/router';
import { ApiError, internal } from './errors.js';
import type { Principal } from './authorization.js';
import { jsonBody } from './json-body.js';
import type { ApiModel } from './model.js';

export interface AppOptions {
  model: ApiModel;
  router: Router;
  openapi: unknown;
  log: (line: Record<string, unknown>) => void;
}

export function createApp({ model, router, openapi, log }: AppOptions): Koa {
  const app = new Koa();
  const domains = new Set(model.domains);
  const errorDomain = (path: string) => {
    const first = path.split('/')[1] ?? '';
    return `${domains.has(first) ? first : 'api'}.${model.service}.dev`;
  };

  app.use(async (ctx, next) => {
    const started = performance.now();
    const requestId = ctx.get('x-request-id') || randomUUID();
    ctx.set('x-request-id', requestId);
    try {
      await next();
    } catch (e) {
      let error: ApiError;
      if (e instanceof ApiError) error = e;
      else {
        error = internal();
        log({ level: 'error', requestId, method: ctx.method, path: ctx.path, error: e instanceof Error ? e.stack : String(e) });
      }
      ctx.status = error.status();
      ctx.body = error.body(errorDomain(ctx.path));
    }
    log({ level: 'info', requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) });
  });

  app.use(jsonBody());

  app.use(async (ctx, next) => {
    // Tokens are not checked yet: every caller is anonymous until access control lands.
    ctx.state.principal = {} satisfies Principal;
    await next();
  });

  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/openapi.json') {
      ctx.body = openapi;
      return;
    }
    await next();
  });

  app.use(router.routes());

  app.use(async (ctx) => {
    const matched = router.match(ctx.path, ctx.method);
    if (matched.path.length > 0) {
      const allowed = [...new Set(matched.path.flatMap((l) => l.methods))].filter((m) => m !== 'HEAD');
      ctx.set('Allow', allowed.join(', '));
      const e = new ApiError('UNIMPLEMENTED', `Method ${ctx.method} is not allowed on ${ctx.path}; allowed: ${allowed.join(', ')}`);
      e.httpStatus = 405;
      throw e;
    }
    throw new ApiError('NOT_FOUND', `Not found: no route ${ctx.method} ${ctx.path}`);
  });

  return app;
}
