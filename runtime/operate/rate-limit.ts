// A token bucket per caller (an identity, or an anonymous caller's address): perSecond tokens a second, at most
// burst kept, one per request. In memory, per process: with several instances each holds its own buckets.
import { ApiError } from '../model/errors.js';

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Buckets kept at most; beyond, full ones (callers idle long enough) are dropped first. */
const maxCallers = 100_000;

export class RateLimit {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly perSecond: number,
    readonly burst: number,
  ) {}

  /** Takes a token for caller; resolves to the whole seconds to wait when there is none (0: go ahead). */
  take(caller: string, nowMs = performance.now()): number {
    let bucket = this.buckets.get(caller);
    if (!bucket) {
      if (this.buckets.size >= maxCallers) this.forget(nowMs);
      bucket = { tokens: this.burst, atMs: nowMs };
      this.buckets.set(caller, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((nowMs - bucket.atMs) / 1000) * this.perSecond);
    bucket.atMs = nowMs;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
  }

  /** Takes a token for who (an identity or an address), or refuses the call with RESOURCE_EXHAUSTED. */
  require(who: string): void {
    const wait = this.take(who);
    if (wait > 0) throw rateLimited(who, this.perSecond, wait);
  }

  /** Drops the buckets that would be full by now, then (if that is not enough) the oldest half. */
  private forget(nowMs: number): void {
    for (const [caller, b] of this.buckets)
      if (b.tokens + ((nowMs - b.atMs) / 1000) * this.perSecond >= this.burst) this.buckets.delete(caller);
    if (this.buckets.size < maxCallers) return;
    let n = 0;
    for (const caller of this.buckets.keys()) if (n++ < maxCallers / 2) this.buckets.delete(caller);
  }
}

/** RESOURCE_EXHAUSTED (429) with when to retry, as AIP-193 details. */
function rateLimited(who: string, perSecond: number, retryAfterSeconds: number): ApiError {
  return new ApiError(
    'RESOURCE_EXHAUSTED',
    `Resource exhausted: more than ${perSecond} requests per second from ${who}; retry after ${retryAfterSeconds} s`,
    [
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterSeconds}s` },
      {
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [{ subject: who, description: `at most ${perSecond} requests per second` }],
      },
    ],
  );
}
