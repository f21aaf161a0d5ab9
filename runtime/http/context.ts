// One HTTP exchange as the middleware sees it: the request's method, raw path, query and headers; the answer's
// status, headers and body; and what the steps before learnt (the caller). Middleware are `(ctx, next)`
// functions composed in order. This replaces Koa, whose context, delegation and response guessing cost about a
// quarter of a small request's CPU; the subset here is what the server uses, and nothing is guessed: an object
// body is JSON, text is plain text, unless a route set the type.
import { validateHeaderName, validateHeaderValue, type IncomingMessage, type ServerResponse } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import type { Principal } from '../access/authorization.js';
import type { RouteTemplate } from './route-template.js';

/** The steps after this one: undefined when they answered at once. */
export type Next = () => Promise<void> | void;
export type Middleware = (ctx: HttpContext, next: Next) => Promise<void> | void;

/** Connections whose request was answered while its body still arrived, until it has. */
const answeredEarly = new WeakSet<object>();

/** Whether the connection's request has had its answer while its body still arrives (Node reads on). */
export function answeredBeforeItsBody(socket: object): boolean {
  return answeredEarly.has(socket);
}

/**
 * Whether more of the request's body may still arrive. One without a body is whole once its headers are parsed,
 * though Node marks it complete only after the 'request' event, when a route answering at once has answered.
 */
function bodyMayFollow(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The Content-Type of a JSON answer. */
export const jsonType = 'application/json; charset=utf-8';
const textType = 'text/plain; charset=utf-8';

/** An absolute-form target's scheme and authority (http://host:port), which a proxy may send before the path. */
const schemeAndAuthority = /^https?:\/\/[^/?#]*/i;

/**
 * The path and query of a request target, as sent: origin form (/p?q), or absolute form (http://host/p?q)
 * with its path kept raw (no dot segments resolved, nothing decoded), exactly as the origin form would give
 * it. Any other form keeps a path that matches no route.
 */
function splitTarget(given: string): [path: string, search: string] {
  const authority = given.startsWith('/') ? null : schemeAndAuthority.exec(given);
  const rest = authority ? given.slice(authority[0].length) : given;
  const target = authority && !rest.startsWith('/') ? `/${rest}` : rest;
  let end = target.indexOf('#');
  if (end < 0) end = target.length;
  const q = target.indexOf('?');
  return q < 0 || q > end ? [target.slice(0, end), ''] : [target.slice(0, q), target.slice(q + 1, end)];
}

export class HttpContext {
  readonly method: string;
  /** the path as sent, not decoded: routes decode their captures */
  readonly path: string;
  private readonly search: string;
  private parsedQuery?: ParsedUrlQuery;
  status = 200;
  /** an object is answered as JSON; a string or Buffer as it is, as `type` (plain text unless set) */
  body: unknown = undefined;
  /** the Content-Type of a body that is not JSON */
  type?: string;
  readonly state: { principal?: Principal } = {};
  /** the parsed JSON body, once read (runtime/http/json-body.ts) */
  requestBody?: unknown;
  /** the matched route's template and its captures, raw */
  route?: RouteTemplate;
  captures: string[] = [];

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {
    this.method = req.method ?? 'GET';
    [this.path, this.search] = splitTarget(req.url ?? '/');
  }

  /** The query parameters; a name given twice has an array of its values. */
  get query(): ParsedUrlQuery {
    // Every pair: Node's default keeps the first 1,000 only, and a parameter dropped is never refused.
    return (this.parsedQuery ??= this.search === '' ? {} : parseQuery(this.search, '&', '=', { maxKeys: 0 }));
  }

  /** A request header's value, by its name in lower case ('' when absent; repeated ones joined with ", "). */
  get(name: string): string {
    const v = this.req.headers[name];
    return v === undefined ? '' : Array.isArray(v) ? v.join(', ') : v;
  }

  /**
   * The answer's headers, as name and value in turn: written with the status in one writeHead, rather than each
   * kept in the response's own table as it is set. Node checks them there again.
   */
  private readonly headers: string[] = [];
  /** their names in lower case, in the same order */
  private readonly names: string[] = [];

  /** Sets an answer header, replacing one of the same name; throws, as Node would, on a name or value HTTP cannot hold. */
  set(name: string, value: string): void {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    this.put(name, name.toLowerCase(), value);
  }

  /**
   * Sets a header of the server's own, its name and value known to be good (the request id, the body's type and
   * length), its name also in lower case: not checked here, only by Node as it writes them.
   */
  setOwn(name: string, lower: string, value: string): void {
    this.put(name, lower, value);
  }

  private put(name: string, lower: string, value: string): void {
    const at = this.names.indexOf(lower);
    if (at >= 0) {
      this.headers[2 * at + 1] = value;
      return;
    }
    this.names.push(lower);
    this.headers.push(name, value);
  }

  /** An answer header's value, if set. */
  header(name: string): string | undefined {
    const at = this.names.indexOf(name.toLowerCase());
    return at < 0 ? undefined : this.headers[2 * at + 1];
  }

  /** Removes an answer header. */
  unset(name: string): void {
    const at = this.names.indexOf(name.toLowerCase());
    if (at < 0) return;
    this.names.splice(at, 1);
    this.headers.splice(2 * at, 2);
  }

  /** Adds a request header's name to Vary, once. */
  vary(field: string): void {
    const now = this.header('vary') ?? '';
    const fields = now === '' ? [] : now.split(/\s*,\s*/);
    if (!fields.some((f) => f.toLowerCase() === field.toLowerCase())) this.set('Vary', [...fields, field].join(', '));
  }

  get ip(): string {
    return this.req.socket.remoteAddress ?? '';
  }

  /** Writes the answer: the status, the body as its type (JSON by default), its length; no body for HEAD. */
  respond(): void {
    const res = this.res;
    if (res.headersSent || res.destroyed) return;
    if (bodyMayFollow(this.req)) {
      const socket = this.req.socket;
      answeredEarly.add(socket);
      this.req.once('end', () => answeredEarly.delete(socket));
    }
    if (this.status === 204 || this.status === 304) {
      res.writeHead(this.status, this.headers).end();
      return;
    }
    if (this.body === undefined) {
      // Written before end(), the headers would leave Node to send an empty body chunked.
      this.setOwn('Content-Length', 'content-length', '0');
      res.writeHead(this.status, this.headers).end();
      return;
    }
    const raw = typeof this.body === 'string' || Buffer.isBuffer(this.body);
    const payload = raw ? (this.body as string | Buffer) : JSON.stringify(this.body);
    // A type HTTP cannot hold (a route's mistake) fails at writeHead, and the fault's answer sets its own over it.
    this.setOwn('Content-Type', 'content-type', this.type ?? (raw ? textType : jsonType));
    // Set here, not left to Node: Node adds it for HTTP/1.1 only, and HEAD is told the length GET would have.
    this.setOwn('Content-Length', 'content-length', String(Buffer.byteLength(payload)));
    res.writeHead(this.status, this.headers);
    if (this.method === 'HEAD') res.end();
    else res.end(payload);
  }
}

/**
 * The middleware run in order, each reaching the next through `next`. No promise of its own: steps that answer
 * synchronously (a get on SQLite) cost calls, not promises and turns of the microtask queue, and the whole
 * chain then answers undefined.
 */
export function compose(middleware: Middleware[]): (ctx: HttpContext, last?: Next) => Promise<void> | void {
  return (ctx, last) => {
    let reached = -1;
    const step = (i: number): Promise<void> | void => {
      if (i <= reached) throw new Error('next() called twice');
      reached = i;
      const fn = i < middleware.length ? middleware[i] : undefined;
      return fn ? fn(ctx, () => step(i + 1)) : last?.();
    };
    return step(0);
  };
}
