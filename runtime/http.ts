// The Koa application: request id and log, errors, body, authenticate, then the generated routes.
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import type Router from '@koa/router';
import { ApiError, internal, invalidArgument, unauthenticated } from './errors.js';
import { unsafeRequestLine } from './input-safety.js';
import { checkParameterNames } from './validation.js';
import type { Principal } from './authorization.js';
import { jsonBody } from './json-body.js';
import type { TokenIssuer } from './issuer.js';
import type { ApiModel } from './model.js';

export interface AppOptions {
  model: ApiModel;
  router: Router;
  openapi: unknown;
  log: (line: Record<string, unknown>) => void;
  issuer: () => TokenIssuer;
  /** the principal of a bearer token; UNAUTHENTICATED when the token is not good here */
  authenticate: (token: string) => Promise<Principal>;
  /** routes that read the Authorization header themselves (the token exchange takes another issuer's token) */
  publicRoutes: Koa.Middleware[];
  /** hand-written routes outside the generated router (v1) */
  extraRoutes: Koa.Middleware[];
}

export function createApp({ model, router, openapi, log, issuer, authenticate, publicRoutes, extraRoutes }: AppOptions): Koa {
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
      // v1 answers errors with its code and message only, whichever step refused the request.
      ctx.body = /^\/[a-z]+\/v1\//.test(ctx.path) ? { code: error.code, message: error.message, details: [] } : error.body(errorDomain(ctx.path));
    }
    log({ level: 'info', requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) });
  });

  app.use(async (ctx, next) => {
    const unsafe = unsafeRequestLine(ctx.path, ctx.query, ctx.get('host') || undefined, ctx.req.httpVersion);
    if (unsafe) throw invalidArgument([unsafe]);
    await next();
  });
  app.use(jsonBody());

  const documents: Record<string, () => unknown> = {
    '/openapi.json': () => openapi,
    '/.well-known/openid-configuration': () => issuer().discovery(),
    '/.well-known/jwks.json': () => issuer().jwks(),
  };
  app.use(async (ctx, next) => {
    const document = ctx.method === 'GET' ? documents[ctx.path] : undefined;
    if (document) {
      checkParameterNames(ctx.query);
      ctx.body = document();
      return;
    }
    await next();
  });

  for (const m of publicRoutes) app.use(m);

  // Authenticate: presented credentials must be good on every route, whether or not it needs a capability, so
  // a refused token is refused the same way everywhere. Whether a caller is needed at all is the route's business.
  app.use(async (ctx, next) => {
    const header = ctx.get('authorization');
    let principal: Principal = {};
    if (header) {
      const m = /^Bearer +([^\s]+) *$/i.exec(header);
      if (!m) throw unauthenticated('the Authorization header must be "Bearer <token>"');
      principal = await authenticate(m[1]);
    }
    ctx.state.principal = principal;
    await next();
  });

  for (const m of extraRoutes) app.use(m);
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
