// What one attempt's outcome means for a delivery: done, tried again later (with exponential backoff and full
// jitter, or when the sink's Retry-After says), or given up.

export type Outcome =
  { kind: 'delivered' } | { kind: 'retry'; error: string; retryAfterMs?: number } | { kind: 'failed'; error: string };

export interface RetryPolicy {
  /** the first retry waits up to this long; each further one twice as long as the one before */
  baseMs: number;
  /** no wait is longer than this */
  maxDelayMs: number;
  /** after this many attempts a delivery has failed */
  maxAttempts: number;
  /** a delivery older than this has failed, however few attempts it had */
  maxAgeMs: number;
}

/** The meaning of an HTTP answer: 2xx delivered; 429 and 5xx tried again; any other answer will not change. */
export function outcomeOfStatus(status: number, retryAfter: string | undefined, nowMs: number): Outcome {
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  const error = `the sink answered ${status}`;
  if (status === 429 || status >= 500) return { kind: 'retry', error, retryAfterMs: retryAfterMs(retryAfter, nowMs) };
  return { kind: 'failed', error };
}

/** Retry-After as seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * When to try again after `attempts` attempts, or undefined when the delivery has failed for good. The wait is
 * random up to the backoff (full jitter: many deliveries to one recovering sink do not come back at once), and
 * never shorter than what the sink asked for, within maxDelayMs.
 */
export function nextAttemptAt(
  policy: RetryPolicy,
  attempts: number,
  firstMs: number,
  nowMs: number,
  askedMs?: number,
  random = Math.random,
): number | undefined {
  if (attempts >= policy.maxAttempts) return undefined;
  const backoff = Math.min(policy.maxDelayMs, policy.baseMs * 2 ** (attempts - 1));
  const wait = Math.min(policy.maxDelayMs, Math.max(askedMs ?? 0, Math.round(random() * backoff)));
  const at = nowMs + wait;
  return at - firstMs > policy.maxAgeMs ? undefined : at;
}
