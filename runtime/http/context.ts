// One HTTP exchange as the middleware sees it: the request's method, raw path, query and headers; the answer's
// status, headers and body; and what the steps before learnt (the caller). Middleware are `(ctx, next)`
// functions composed in order. This replaces Koa, whose context, delegation and response guessing cost about a
// quarter of a small request's CPU; the subset here is what the server uses, and nothing is guessed: an object
// body is JSON, text is plain text, unless a route set the type.
import { validateHeaderName, validateHeaderValue, type IncomingMessage, type ServerResponse } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import type { Principal } from '../access/authorization.js';
import type { RouteTemplate } from './route-template.js';

export type Next = () => Promise<void>;
export type Middleware = (ctx: HttpContext, next: Next) => Promise<void> | void;

/** Connections whose request was answered while its body still arrived, until it has. */
const answeredEarly = new WeakSet<object>();

/** Whether the connection's request has had its answer while its body still arrives (Node reads on). */
export function answeredBeforeItsBody(socket: object): boolean {
  return answeredEarly.has(socket);
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

  /** A request header's value ('' when absent; repeated ones joined with ", "). */
  get(name: string): string {
    const v = this.req.headers[name.toLowerCase()];
    return v === undefined ? '' : Array.isArray(v) ? v.join(', ') : v;
  }

  /**
   * The answer's headers, as name and value in turn: written with the status in one writeHead (Node validates them
   * there), rather than each kept in the response's own table as it is set.
   */
  private readonly headers: string[] = [];

  /** Sets an answer header, replacing one of the same name; throws, as Node would, on a name or value HTTP cannot hold. */
  set(name: string, value: string): void {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    const at = this.headerAt(name);
    if (at < 0) this.headers.push(name, value);
    else this.headers[at + 1] = value;
  }

  /** An answer header's value, if set. */
  header(name: string): string | undefined {
    const at = this.headerAt(name);
    return at < 0 ? undefined : this.headers[at + 1];
  }

  /** Removes an answer header. */
  unset(name: string): void {
    const at = this.headerAt(name);
    if (at >= 0) this.headers.splice(at, 2);
  }

  private headerAt(name: string): number {
    const lower = name.toLowerCase();
    for (let i = 0; i < this.headers.length; i += 2) if (this.headers[i].toLowerCase() === lower) return i;
    return -1;
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
    if (!this.req.complete) {
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
      this.set('Content-Length', '0');
      res.writeHead(this.status, this.headers).end();
      return;
    }
    const raw = typeof this.body === 'string' || Buffer.isBuffer(this.body);
    const payload = raw ? (this.body as string | Buffer) : JSON.stringify(this.body);
    this.set('Content-Type', this.type ?? (raw ? textType : jsonType));
    // Set here, not left to Node: Node adds it for HTTP/1.1 only, and HEAD is told the length GET would have.
    this.set('Content-Length', String(Buffer.byteLength(payload)));
    res.writeHead(this.status, this.headers);
    if (this.method === 'HEAD') res.end();
    else res.end(payload);
  }
}

/**
 * The middleware run in order, each reaching the next through `next`. No async frame of its own per step: a
 * step that answers synchronously costs a call, not a promise and a turn of the microtask queue.
 */
export function compose(middleware: Middleware[]): (ctx: HttpContext, next?: Next) => Promise<void> {
  return (ctx, last) => {
    let reached = -1;
    const step = (i: number): Promise<void> => {
      if (i <= reached) return Promise.reject(new Error('next() called twice'));
      reached = i;
      const fn = i < middleware.length ? middleware[i] : undefined;
      try {
        if (fn) return Promise.resolve(fn(ctx, () => step(i + 1)));
        return last ? last() : Promise.resolve();
      } catch (e) {
        return Promise.reject(e);
      }
    };
    return step(0);
  };
}
