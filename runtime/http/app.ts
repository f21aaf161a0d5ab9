// The HTTP application: request id and log, errors, body, public routes, authenticate, then the route tables.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpContext } from './context.js';
import { Router } from './router.js';
import type { RouteTemplate } from './route-template.js';
import { ApiError, internal, invalidArgument, unauthenticated } from '../model/errors.js';
import { unsafeRequestLine } from '../pipeline/input-safety.js';
import { checkParameterNames } from '../pipeline/validation.js';
import type { Principal } from '../access/authorization.js';
import { bearerToken } from '../access/bearer-token.js';
import { jsonBody } from './json-body.js';
import type { TokenIssuer } from '../access/issuer.js';
import type { ApiModel } from '../model/api-model.js';
import type { Metrics } from '../operate/metrics.js';
import type { RateLimit } from '../operate/rate-limit.js';
import { cors } from './cors.js';
import { callerAddress, type TrustedProxies } from '../operate/caller-address.js';

/** One table of routes; every table takes part in the one set of routing rules (404, 405 with Allow). */
export interface RouteTable {
  router: Router;
  /** a cheap test of the paths the table may serve: other requests skip matching it */
  serves?: (path: string) => boolean;
}

export interface AppOptions {
  model: ApiModel;
  openapi: unknown;
  /** where log lines go; undefined: nowhere (LOG=off), and none is made */
  log?: (line: Record<string, unknown>) => void;
  issuer: () => TokenIssuer;
  /** the principal of a bearer token; UNAUTHENTICATED when the token is not good here */
  authenticate: (token: string) => Principal | Promise<Principal>;
  /** routes before authentication: they need no caller, or read the Authorization header themselves (the token exchange) */
  publicRoutes: RouteTable[];
  /** every other route (v2, v1) */
  routes: RouteTable[];
  /** requests counted and timed */
  metrics?: Metrics;
  /** CORS for these origins (['*']: any); none when undefined */
  corsOrigins?: string[];
  maxBodyBytes?: number;
  /** requests per second per caller */
  rateLimit?: RateLimit;
  /** the proxies whose X-Forwarded-For names an anonymous caller's address */
  trustedProxies?: TrustedProxies;
}

/** The methods any table serves at this path (HEAD goes with GET). */
function allowedMethods(tables: RouteTable[], path: string): string[] {
  const methods = tables.flatMap((t) => t.router.methodsAt(path));
  return [...new Set(methods)].filter((m) => m !== 'HEAD');
}

function methodNotAllowed(method: string, path: string, allowed: string[]): ApiError {
  const e = new ApiError('UNIMPLEMENTED', `Method ${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`);
  e.httpStatus = 405;
  return e;
}

/**
 * The first of the tables serving the path whose route answers the request (Router.dispatch: true when it
 * answered at once); undefined when none does.
 */
function dispatch(tables: RouteTable[], ctx: HttpContext): Promise<void> | true | undefined {
  for (const t of tables) {
    if (t.serves && !t.serves(ctx.path)) continue;
    const answered = t.router.dispatch(ctx);
    if (answered) return answered;
  }
  return undefined;
}

/** The matched route's template with its captures as "*", never the path (it holds uids); "(none)" if none matched. */
export function routeTemplate(ctx: HttpContext): string {
  return ctx.route?.name ?? '(none)';
}

/** The first table's route for the request's method and path, or at its path; none for a 404. */
function routeAt(tables: RouteTable[], ctx: HttpContext): RouteTemplate | undefined {
  for (const t of tables) {
    if (t.serves && !t.serves(ctx.path)) continue;
    const route = t.router.routeAt(ctx.method, ctx.path);
    if (route !== undefined) return route;
  }
  return undefined;
}

/** Probes and scrapes: not logged when they succeed (they come every few seconds), never rate limited. */
const probePaths = new Set(['/healthz', '/readyz', '/metrics']);

function levelOf(status: number): string {
  return status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
}

/** What runs a request once it has its id: undefined when it was answered at once. */
type Handle = (ctx: HttpContext) => Promise<void> | void;

/**
 * The outermost step: a request id, every error as the API's error body, and one log line per request with its
 * outcome. The line has the route template, the caller (identity, address) and the error's reason, never the
 * query (a page token or any other value in it could be a secret).
 */
function answer(
  log: AppOptions['log'],
  errorDomain: (path: string) => string,
  tables: RouteTable[],
  proxies: TrustedProxies | undefined,
): (ctx: HttpContext, handle: Handle, then: (fault?: { thrown: unknown }) => boolean) => void {
  return (ctx, handle, then) => {
    const started = log === undefined ? 0 : performance.now();
    // A caller's request id is echoed only when it is a plain token: a header value is the client's to choose.
    const given = ctx.get('x-request-id');
    // Random, not a count: a count would tell anyone how many requests this instance answers.
    const requestId = given !== '' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    ctx.setOwn('x-request-id', 'x-request-id', requestId);
    // then: writes the answer, or what kept errorAnswer() from making it (a fault of the server's own), and says
    // whether a fault's 500 went instead. The log line comes after it, with the status the caller got.
    const settle = (failure?: { thrown: unknown }) => {
      let error: ApiError | undefined;
      let unanswerable: { thrown: unknown } | undefined;
      try {
        if (failure) error = errorAnswer(ctx, requestId, failure.thrown);
      } catch (e) {
        unanswerable = { thrown: e };
      }
      // Refused before a route ran it (a bad token, 405, 415, malformed JSON, 429): logged and counted under the
      // route it was for.
      if (ctx.route === undefined) ctx.route = routeAt(tables, ctx);
      const faulted = then(unanswerable);
      try {
        logged(ctx, requestId, started, faulted ? internal() : error);
      } catch {
        // The answer is out; a log that cannot take the line must not end the process (a throw here would be
        // uncaught in the 'request' event, or an unhandled rejection).
      }
    };
    let handled: Promise<void> | void;
    try {
      handled = handle(ctx);
    } catch (e) {
      return settle({ thrown: e });
    }
    if (handled === undefined) return settle();
    handled.then(
      () => settle(),
      (e: unknown) => settle({ thrown: e }),
    );
  };

  /** What was thrown as the API's error answer (a fault of our own logged, and answered as INTERNAL). */
  function errorAnswer(ctx: HttpContext, requestId: string, e: unknown): ApiError {
    let error: ApiError;
    if (e instanceof ApiError) error = e;
    else {
      error = internal();
      log?.({
        level: 'error',
        requestId,
        method: ctx.method,
        path: ctx.path,
        error: e instanceof Error ? e.stack : String(e),
      });
    }
    ctx.status = error.status();
    // What the route said of its own answer does not describe this one.
    ctx.type = undefined;
    ctx.unset('Cache-Control');
    const retryAfter = error.retryAfterSeconds();
    if (retryAfter !== undefined) ctx.set('Retry-After', String(retryAfter));
    // v1 answers errors with its code and message only, whichever step refused the request.
    ctx.body = /^\/[a-z]+\/v1\//.test(ctx.path)
      ? { code: error.code, message: error.message, details: [] }
      : error.body(errorDomain(ctx.path));
    return error;
  }

  /** The request's log line, once its answer is written. */
  function logged(ctx: HttpContext, requestId: string, started: number, error: ApiError | undefined): void {
    if (log === undefined || (ctx.status < 400 && probePaths.has(ctx.path))) return;
    const subject = ctx.state.principal?.subject;
    const address = callerAddress(ctx.ip, undefined);
    const caller = addressOf(ctx, proxies);
    log({
      level: levelOf(ctx.status),
      requestId,
      method: ctx.method,
      path: ctx.path,
      route: routeTemplate(ctx),
      status: ctx.status,
      ms: Math.round(performance.now() - started),
      address,
      // The caller a trusted proxy forwarded for, as the rate limit counts it.
      ...(caller !== address ? { forwardedFor: caller } : {}),
      ...(subject ? { identity: subject } : {}),
      ...(error ? { reason: error.codeName } : {}),
    });
  }
}

/** Takes a request from the caller's bucket: the identity when known, else the address it comes from. */
function limit(rateLimit: RateLimit, ctx: HttpContext, proxies: TrustedProxies | undefined): void {
  if (probePaths.has(ctx.path)) return;
  const subject = ctx.state.principal?.subject;
  rateLimit.require(subject ? `identity ${subject}` : `address ${addressOf(ctx, proxies)}`);
}

function addressOf(ctx: HttpContext, proxies: TrustedProxies | undefined): string {
  return callerAddress(ctx.ip, ctx.get('x-forwarded-for') || undefined, proxies);
}

/**
 * A refused token costs its caller's address a request: forging or replaying tokens is limited as any anonymous
 * calling is, and past the limit the answer is 429, not another verdict on a token.
 */
function refusedToken(
  rateLimit: RateLimit | undefined,
  ctx: HttpContext,
  proxies: TrustedProxies | undefined,
  e: unknown,
): never {
  if (rateLimit && e instanceof ApiError && e.codeName === 'UNAUTHENTICATED')
    rateLimit.require(`address ${addressOf(ctx, proxies)}`);
  throw e;
}

/**
 * A fault outside `answer`, or an answer that cannot be written (a body JSON cannot hold): logged, and the
 * caller told of an internal error if nothing has been sent yet.
 */
function fault(
  ctx: HttpContext,
  e: unknown,
  log: (line: Record<string, unknown>) => void,
  errorDomain: (path: string) => string,
): void {
  try {
    log({ level: 'error', method: ctx.method, path: ctx.path, error: e instanceof Error ? e.stack : String(e) });
    if (ctx.res.headersSent) return void ctx.res.destroy();
    ctx.status = 500;
    ctx.type = undefined;
    ctx.unset('Cache-Control');
    ctx.body = internal().body(errorDomain(ctx.path));
    ctx.respond();
  } catch {
    // Not even that could be written: the connection is closed rather than left waiting.
    ctx.res.destroy();
  }
}

/**
 * Authenticate: presented credentials must be good on every route, whether or not it needs a capability, so a
 * refused token is refused the same way everywhere. Whether a caller is needed at all is the route's business.
 * The caller is in ctx.state at once when the token's principal is known, else once the promise is kept.
 */
function authentication(o: AppOptions): (ctx: HttpContext) => Promise<void> | void {
  const { authenticate, rateLimit, trustedProxies } = o;
  const authenticated = (ctx: HttpContext, principal: Principal) => {
    ctx.state.principal = principal;
    if (rateLimit) limit(rateLimit, ctx, trustedProxies);
  };
  return (ctx) => {
    const header = ctx.get('authorization');
    if (!header) return authenticated(ctx, {});
    const token = bearerToken(header);
    let principal: Principal | Promise<Principal>;
    try {
      if (token === undefined) throw unauthenticated('the Authorization header must be "Bearer <token>"');
      principal = authenticate(token);
    } catch (e) {
      return refusedToken(rateLimit, ctx, trustedProxies, e);
    }
    if (!(principal instanceof Promise)) return authenticated(ctx, principal);
    return principal.then(
      (p) => authenticated(ctx, p),
      (e: unknown) => refusedToken(rateLimit, ctx, trustedProxies, e),
    );
  };
}

/** What answers each request: the steps below in order, then the answer written. */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** The documents this server describes itself with: routes before authentication, as anyone may read them. */
function documentRoutes(openapi: unknown, issuer: () => TokenIssuer): RouteTable {
  const router = new Router();
  const paths = new Set<string>();
  for (const [path, document] of Object.entries<() => unknown>({
    // The document names this server as its server: its public URL, the issuer of its tokens.
    '/openapi.json': () => ({ ...(openapi as object), servers: [{ url: issuer().issuer }] }),
    '/.well-known/openid-configuration': () => issuer().discovery(),
    '/.well-known/jwks.json': () => issuer().jwks(),
  })) {
    paths.add(path);
    router.get(path, (ctx) => {
      checkParameterNames(ctx.query);
      ctx.body = document();
    });
  }
  return { router, serves: (path) => paths.has(path) };
}

/** A known path with another method is 405 with Allow (whichever table knows it), else 404. */
function notRouted(tables: RouteTable[], ctx: HttpContext): ApiError {
  // HEAD is told what GET would be, its length too: the message names GET.
  const method = ctx.method === 'HEAD' ? 'GET' : ctx.method;
  const allowed = allowedMethods(tables, ctx.path);
  if (allowed.length === 0) return new ApiError('NOT_FOUND', `Not found: no route ${method} ${ctx.path}`);
  ctx.set('Allow', allowed.join(', '));
  return methodNotAllowed(method, ctx.path, allowed);
}

/**
 * The steps of a request after its id, called one after the other rather than composed as middleware: CORS, the
 * request line's safety, the body, the routes before authentication, authentication, the other routes. Each is
 * a direct call, and a step that is done at once costs no promise.
 */
function requestSteps(o: AppOptions, before: RouteTable[], tables: RouteTable[]): Handle {
  const { routes, rateLimit, trustedProxies } = o;
  const preflight = o.corsOrigins ? cors(o.corsOrigins) : undefined;
  const readBody = jsonBody(o.maxBodyBytes);
  const authenticate = authentication(o);
  // The routes that read their own credentials come before authentication. A wrong method on one of their paths
  // is answered there too, before another issuer's token could be refused as ours.
  const publicRoute = (ctx: HttpContext): Promise<void> | true | undefined => {
    let limited = false;
    for (const t of before) {
      if (t.serves && !t.serves(ctx.path)) continue;
      // Who calls these is not known yet: an anonymous caller's bucket, by address.
      if (rateLimit && !limited) limit(rateLimit, ctx, trustedProxies);
      limited = true;
      const answered = t.router.dispatch(ctx);
      if (answered) return answered;
      if (t.router.methodsAt(ctx.path).length > 0) throw notRouted(tables, ctx);
    }
    return undefined;
  };
  const route = (ctx: HttpContext): Promise<void> | undefined => {
    const answered = dispatch(routes, ctx);
    if (answered === undefined) throw notRouted(tables, ctx);
    return answered === true ? undefined : answered;
  };
  const routed = (ctx: HttpContext): Promise<void> | undefined => {
    const answered = publicRoute(ctx);
    if (answered !== undefined) return answered === true ? undefined : answered;
    const caller = authenticate(ctx);
    return caller ? caller.then(() => route(ctx)) : route(ctx);
  };
  return (ctx) => {
    if (preflight?.(ctx)) return;
    const unsafe = unsafeRequestLine(ctx.path, ctx.query, ctx.get('host') || undefined, ctx.req.httpVersion);
    if (unsafe) throw invalidArgument([unsafe]);
    const reading = readBody(ctx);
    return reading ? reading.then(() => routed(ctx)) : routed(ctx);
  };
}

export function createApp(o: AppOptions): RequestListener {
  const { model, openapi, issuer, publicRoutes, routes, metrics } = o;
  const log = o.log ?? (() => {});
  const domains = new Set(model.domains);
  const errorDomain = (path: string) => {
    const first = path.split('/')[1] ?? '';
    return `${domains.has(first) ? first : 'api'}.${model.service}.dev`;
  };
  const before = [documentRoutes(openapi, issuer), ...publicRoutes];
  const tables = [...before, ...routes];
  const answerWith = answer(o.log, errorDomain, tables, o.trustedProxies);
  const handle = requestSteps(o, before, tables);
  return (req, res) => {
    const started = performance.now();
    metrics?.requestStarted();
    const ctx = new HttpContext(req, res);
    // Counted and timed from its arrival to its answer, whichever step answered it.
    const finished = () =>
      metrics?.requestFinished(routeTemplate(ctx), ctx.method, ctx.status, (performance.now() - started) / 1000);
    answerWith(ctx, handle, (failure) => {
      let faulted = false;
      try {
        if (failure) throw failure.thrown;
        ctx.respond();
      } catch (e) {
        fault(ctx, e, log, errorDomain);
        faulted = true;
      }
      finished();
      return faulted;
    });
  };
}
