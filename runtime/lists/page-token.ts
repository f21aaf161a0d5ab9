// Page tokens: opaque, HMAC-protected keyset cursors bound to the query that issued them.
import { createHmac, hash, timingSafeEqual } from 'node:crypto';

/** Where the next page starts: after the row with this sort key and uid. */
export interface Cursor {
  key: string | number | boolean | null;
  uid: string;
}

export const pageTokenLifetimeMs = 3 * 24 * 60 * 60 * 1000;

export type PageTokenResult =
  { status: 'valid'; cursor: Cursor } | { status: 'expired' } | { status: 'invalid'; reason: string };

interface Payload {
  q: string;
  k: Cursor['key'];
  u: string;
  t: number;
}

export class PageToken {
  constructor(private readonly secret: Buffer) {}

  /** A digest of everything that decides which rows a query returns and in which order. */
  static queryDigest(query: Record<string, unknown>): string {
    const canonical = JSON.stringify(
      Object.keys(query)
        .sort()
        .map((k) => [k, query[k]]),
    );
    return hash('sha256', canonical, 'base64url').slice(0, 22);
  }

  issue(queryDigest: string, cursor: Cursor, now = Date.now()): string {
    const payload = Buffer.from(
      JSON.stringify({ q: queryDigest, k: cursor.key, u: cursor.uid, t: now } satisfies Payload),
    );
    return `${payload.toString('base64url')}.${this.sign(payload).toString('base64url')}`;
  }

  read(token: string, queryDigest: string, now = Date.now()): PageTokenResult {
    const [body, signature, extra] = token.split('.');
    if (!body || !signature || extra !== undefined) return { status: 'invalid', reason: 'malformed' };
    const payload = Buffer.from(body, 'base64url');
    const given = Buffer.from(signature, 'base64url');
    const expected = this.sign(payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { status: 'invalid', reason: 'not issued by this server' };
    let p: Payload;
    try {
      p = JSON.parse(payload.toString('utf8')) as Payload;
    } catch {
      return { status: 'invalid', reason: 'malformed' };
    }
    if (p.q !== queryDigest)
      return { status: 'invalid', reason: 'issued for a different query (filters or order_by changed)' };
    if (now - p.t > pageTokenLifetimeMs) return { status: 'expired' };
    return { status: 'valid', cursor: { key: p.k, uid: p.u } };
  }

  private sign(payload: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(payload).digest();
  }
}
