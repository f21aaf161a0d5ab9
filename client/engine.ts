// The engine of the typed client (generated/client/index.ts is its table of operations; the generator copies this
// file beside it, so the client folder stands alone as a package): a request per call over fetch and nothing else,
// AIP-193 errors as ApiCallError objects carrying their details, every item of a list across its pages as an async
// iterator, and optional retries of UNAVAILABLE. It imports nothing, and its exported declarations are written out
// (no inferred types, no DOM or Node types), so its .d.ts is made file by file and compiles in any project.

/** What the client needs of fetch: the global one of Node 18+ and browsers fits. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<{ ok: boolean; status: number; text(): Promise<string>; headers: { get(name: string): string | null } }>;

export interface ClientOptions {
  /** where the API is served, e.g. https://api.example.com */
  baseUrl: string;
  /** a bearer token, or a function giving the current one (called per request: refreshed tokens) */
  token?: string | (() => string | Promise<string>);
  /** how many times an UNAVAILABLE answer (or a failed connection) is retried, with backoff; 0 by default */
  retries?: number;
  /** the fetch to use (default: the global one) */
  fetch?: FetchLike;
}

/** A google.rpc detail of an error: ErrorInfo, BadRequest, ResourceInfo, PreconditionFailure, RetryInfo, ... */
export interface ErrorDetail {
  '@type': string;
  [field: string]: unknown;
}

/** An error answer of the API: its HTTP status (0 when no answer came), google.rpc code, message and details. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly details: ErrorDetail[],
  ) {
    super(message);
    this.name = 'ApiCallError';
  }

  /** The detail of this type (its short name, e.g. 'BadRequest'), if the error carries one. */
  detail(type: string): ErrorDetail | undefined {
    return this.details.find((d) => d['@type'] === `type.googleapis.com/google.rpc.${type}`);
  }

  /** ErrorInfo's reason, e.g. NOT_FOUND, INVALID_ARGUMENT; UNAVAILABLE when the server could not be reached. */
  get reason(): string | undefined {
    return (this.detail('ErrorInfo')?.reason as string | undefined) ?? (this.code === 14 ? 'UNAVAILABLE' : undefined);
  }
}

/** How an operation is called: its method, its path template and which request keys fill the template. */
export interface OperationRoute {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** e.g. /registry/v2/repos/{uid} */
  path: string;
  params: readonly string[];
}

/**
 * One method of the client: a call answering the body, a call answering nothing (delete), a list request
 * with body mode (batch methods send the request as the body), or every item of a list under its collection.
 */
export type Operation =
  | { route: OperationRoute; answer: 'body' | 'none' | 'asBody' }
  | { route: OperationRoute; answer: 'items'; collection: string };

/** What a list answers: the items under the collection's name, and the paging fields. */
export type Page<K extends string, T> = { [key in K]: T[] } & {
  nextPageToken?: string;
  totalCount: string;
  skipped: number;
};

type QueryValue = string | number | bigint | boolean | readonly (string | number | bigint)[] | undefined;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** JSON with bigints as strings, as the API writes int64 values. */
const toJson = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

export class Client {
  private readonly fetch: FetchLike;

  constructor(private readonly options: ClientOptions) {
    this.fetch = options.fetch ?? (globalThis.fetch as unknown as FetchLike);
  }

  /**
   * Calls an operation. The request's keys named by the route fill its path (a uid keeps its slashes), `body` is
   * the JSON body, and every other key is a query parameter (arrays repeat the parameter).
   */
  async call<T>(route: OperationRoute, request: Record<string, unknown> = {}): Promise<T> {
    let path = route.path;
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(request)) {
      if (key === 'body' || value === undefined) continue;
      if (route.params.includes(key)) {
        path = path.replace(`{${key}}`, String(value).split('/').map(encodeURIComponent).join('/'));
        continue;
      }
      for (const v of Array.isArray(value) ? value : [value as QueryValue]) query.append(key, String(v));
    }
    const missing = /\{(\w+)\}/.exec(path);
    if (missing) throw new TypeError(`${route.method} ${route.path}: the request needs ${missing[1]}`);
    const url = `${this.options.baseUrl.replace(/\/$/, '')}${path}${query.toString() ? `?${query}` : ''}`;
    const body = request.body === undefined ? undefined : toJson(request.body);
    return this.send<T>(route.method, url, body);
  }

  /** Every item of a list, page after page, following nextPageToken until the last page. */
  async *items<T>(route: OperationRoute, collection: string, request: Record<string, unknown> = {}): AsyncGenerator<T> {
    let pageToken: string | undefined;
    do {
      const page = await this.call<Record<string, unknown>>(route, { ...request, pageToken });
      for (const item of (page[collection] as T[] | undefined) ?? []) yield item;
      pageToken = (page.nextPageToken as string | undefined) || undefined;
    } while (pageToken);
  }

  /** The methods of a table of operations, by group (domain) and name; the generated client types them. */
  bind(
    table: Record<string, Record<string, Operation>>,
  ): Record<string, Record<string, (request?: Record<string, unknown>) => unknown>> {
    const method =
      (op: Operation) =>
      (request: Record<string, unknown> = {}) => {
        if (op.answer === 'items') return this.items(op.route, op.collection, request);
        if (op.answer === 'asBody') return this.call(op.route, { body: request });
        const answer = this.call(op.route, request);
        return op.answer === 'none' ? answer.then(() => undefined) : answer;
      };
    return Object.fromEntries(
      Object.entries(table).map(([group, ops]) => [
        group,
        Object.fromEntries(Object.entries(ops).map(([name, op]) => [name, method(op)])),
      ]),
    );
  }

  private async send<T>(method: string, url: string, body: string | undefined): Promise<T> {
    const retries = this.options.retries ?? 0;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json' };
      const token = typeof this.options.token === 'function' ? await this.options.token() : this.options.token;
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      let res: Awaited<ReturnType<FetchLike>>;
      try {
        res = await this.fetch(url, { method, headers, body });
      } catch (e) {
        if (attempt < retries) {
          await sleep(backoffMs(attempt));
          continue;
        }
        throw unreachable(method, url, e);
      }
      const text = await res.text();
      const parsed = text ? parseJson(text) : {};
      if (res.ok) return parsed as T;
      const error = toError(res.status, parsed, text);
      if (error.code === 14 && attempt < retries) {
        const after = Number(res.headers.get('retry-after'));
        await sleep(after > 0 ? after * 1000 : backoffMs(attempt));
        continue;
      }
      throw error;
    }
  }
}

/** Full jitter below an exponential ceiling: 100 ms, 200 ms, 400 ms, ... at most 5 s. */
function backoffMs(attempt: number): number {
  return Math.random() * Math.min(5000, 100 * 2 ** attempt);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A connection that failed (refused, reset, a name that does not resolve) as UNAVAILABLE, naming the cause. */
function unreachable(method: string, url: string, e: unknown): ApiCallError {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (e instanceof Error ? e.message : String(e));
  const error = new ApiCallError(0, 14, `Unavailable: ${method} ${url}: ${why}`, []);
  (error as { cause?: unknown }).cause = e;
  return error;
}

/** The AIP-193 body as an ApiCallError; an answer that is not one (a proxy's page) keeps its status and text. */
function toError(status: number, body: unknown, text: string): ApiCallError {
  const b = body as { code?: unknown; message?: unknown; details?: unknown } | undefined;
  if (b && typeof b.code === 'number' && typeof b.message === 'string')
    return new ApiCallError(status, b.code, b.message, Array.isArray(b.details) ? (b.details as ErrorDetail[]) : []);
  return new ApiCallError(status, status === 503 ? 14 : 2, `HTTP ${status}: ${text.slice(0, 200)}`, []);
}
