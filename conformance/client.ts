// HTTP for the suite: every exchange is kept so that a failure can show the request that produced it.

export interface Exchange {
  method: string;
  path: string;
  /** the gRPC :path the call went to, when the suite runs over gRPC */
  rpc?: string;
  requestBody?: unknown;
  status: number;
  body: any;
  /** the answer's headers, lower-cased (HTTP only) */
  headers?: Record<string, string>;
}

export class ConformanceFailure extends Error {
  constructor(
    readonly expected: string,
    readonly actual: string,
    readonly exchange?: Exchange,
  ) {
    super(`expected ${expected}, got ${actual}`);
  }
}

/** A rule that cannot run against this target (no data, a missing prerequisite). */
export class Skip extends Error {}

/** What the rules call the target through: HTTP, or gRPC addressed by the same method and path. */
export interface ApiClient {
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Exchange>;
  /**
   * a token of an identity bound to no role, for the 403 rules (the capability rules' callers come from the token
   * exchange, where the target has one)
   */
  readonly lowPrivilegeToken?: string;
  /** gRPC only: an rpc by its :path, for the surfaces no HTTP route mirrors (v2beta1 names, the token service) */
  rpc?(path: string, request: Record<string, unknown>, headers?: Record<string, string>): Promise<Exchange>;
}

export class Client implements ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: () => Promise<string | undefined>,
    /** a token of an identity without capabilities under the suite's group, for the 403 rules */
    readonly lowPrivilegeToken?: string,
  ) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Exchange> {
    const h: Record<string, string> = { accept: 'application/json', ...headers };
    // An authorization header given by the rule wins; '' sends none.
    if (h.authorization === undefined) {
      const token = await this.token?.();
      if (token) h.authorization = `Bearer ${token}`;
    } else if (h.authorization === '') delete h.authorization;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: h,
      body: payload,
      signal: AbortSignal.timeout(30000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // keep the text: a rule reports it
    }
    const answered = Object.fromEntries(res.headers.entries());
    return { method, path, requestBody: body, status: res.status, body: parsed, headers: answered };
  }
}

const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? 'undefined'));

export function expect(condition: boolean, expected: string, actual: unknown, exchange?: Exchange): asserts condition {
  if (!condition) throw new ConformanceFailure(expected, show(actual), exchange);
}

/** The exchange succeeded with HTTP 200 and a JSON object. */
export function expectOk(x: Exchange, what: string): any {
  expect(
    x.status === 200 && typeof x.body === 'object' && x.body !== null,
    `${what}: HTTP 200 with a JSON object`,
    `HTTP ${x.status} ${show(x.body)}`,
    x,
  );
  return x.body;
}

const typeUrl = (t: string) => `type.googleapis.com/google.rpc.${t}`;
/** The HTTP status of each gRPC code our errors use. */
export const statusOf: Record<number, number> = {
  3: 400,
  5: 404,
  6: 409,
  7: 403,
  9: 400,
  16: 401,
  8: 429,
  12: 501,
  13: 500,
  14: 503,
};

/** An AIP-193 error with this code, its HTTP status, typed details and exactly one ErrorInfo. */
export function expectError(x: Exchange, code: number, reason: string, detail?: string): any {
  const b = x.body;
  expect(x.status === statusOf[code], `HTTP ${statusOf[code]} (${reason})`, `HTTP ${x.status} ${show(b)}`, x);
  expect(typeof b === 'object' && b !== null && b.code === code, `body code ${code}`, b, x);
  expect(typeof b.message === 'string' && b.message.length > 0, 'a message', b.message, x);
  expect(Array.isArray(b.details), 'details to be an array', b.details, x);
  for (const d of b.details)
    expect(
      typeof d['@type'] === 'string' && d['@type'].startsWith('type.googleapis.com/'),
      'every detail to have an @type URL',
      d,
      x,
    );
  const infos = b.details.filter((d: any) => d['@type'] === typeUrl('ErrorInfo'));
  expect(infos.length === 1, 'exactly one ErrorInfo', infos.length, x);
  expect(infos[0].reason === reason, `ErrorInfo.reason ${reason}`, infos[0].reason, x);
  if (detail)
    expect(
      b.details.some((d: any) => d['@type'] === typeUrl(detail)),
      `a ${detail} detail`,
      b.details.map((d: any) => d['@type']),
      x,
    );
  return b;
}
