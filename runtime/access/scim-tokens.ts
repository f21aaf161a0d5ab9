// The lifecycle of an identity provider's SCIM bearer token, as the reference shapes it: generated once (a second
// generate is FAILED_PRECONDITION), regenerated with an overlap during which the previous token still works,
// revoked (both tokens at once), and provisioning switched on or off. A token is "cgscim_" and 64 hex, shown once;
// only its SHA-256 is stored. Every change makes a new etag; regenerate and setScimEnabled must name the current
// one, so two operators cannot silently undo each other (a stale etag is ABORTED, AIP-154).
import { createHash, randomBytes } from 'node:crypto';
import { ApiError, invalidArgument } from '../model/errors.js';

export type CredentialState =
  | 'CREDENTIAL_STATE_UNSPECIFIED'
  | 'CREDENTIAL_STATE_NOT_ISSUED'
  | 'CREDENTIAL_STATE_LIVE'
  | 'CREDENTIAL_STATE_EXPIRED'
  | 'CREDENTIAL_STATE_REVOKED'
  | 'CREDENTIAL_STATE_ROTATING';

/** IdentityProvider.scim, as stored and shown. */
export interface ScimState {
  enabled?: boolean;
  tokenExpireTime?: string;
  previousTokenExpireTime?: string;
  credentialState?: CredentialState;
  etag?: string;
}

/** The provider's SCIM fields: the state it shows, and the digests it never shows. */
export interface ScimFields {
  scim?: ScimState | null;
  scimTokenDigest?: string | null;
  scimPreviousTokenDigest?: string | null;
}

const day = 24 * 60 * 60 * 1000;
export const defaultTokenDays = 365;
export const maxTokenDays = 2 * 365;
export const defaultOverlapSeconds = 60 * 60;
export const maxOverlapSeconds = 24 * 60 * 60;

export const newEtag = () => randomBytes(12).toString('hex');
const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** A provider's state before any SCIM call: what its create stores. */
export const initialScim = (): ScimState => ({
  enabled: false,
  credentialState: 'CREDENTIAL_STATE_NOT_ISSUED',
  etag: newEtag(),
});

/** The etag a call names must be the provider's current one. */
export function requireEtag(state: ScimState | null | undefined, etag: string): void {
  if (!etag) throw invalidArgument([{ field: 'etag', description: 'etag (IdentityProvider.scim.etag) is required' }]);
  if (etag !== state?.etag)
    throw new ApiError(
      'ABORTED',
      'Aborted: the etag is not the current one: the SCIM state changed since it was read; read the identity provider again',
    );
}

/** When a new token ends: expireTime (in the future, at most two years away), never, or one year from now. */
export function tokenExpiry(expireTime: string | undefined, neverExpires: boolean | undefined): string | undefined {
  if (expireTime && neverExpires)
    throw invalidArgument([{ field: 'expire_time', description: 'expire_time and never_expires exclude each other' }]);
  if (neverExpires) return undefined;
  const nowMs = Date.now();
  if (!expireTime) return new Date(nowMs + defaultTokenDays * day).toISOString();
  const at = Date.parse(expireTime);
  if (!(at > nowMs))
    throw invalidArgument([{ field: 'expire_time', description: 'expire_time must be in the future' }]);
  if (at > nowMs + maxTokenDays * day)
    throw invalidArgument([{ field: 'expire_time', description: 'expire_time is at most two years from now' }]);
  return new Date(at).toISOString();
}

/** A google.protobuf.Duration in JSON ("90s", "1.5s"): seconds, capped at 24 h; absent: one hour. */
export function overlapSeconds(overlap: string | undefined): number {
  if (overlap === undefined || overlap === '') return defaultOverlapSeconds;
  const m = /^(\d{1,12})(?:\.(\d{1,9}))?s$/.exec(overlap);
  if (!m) throw invalidArgument([{ field: 'overlap', description: 'overlap is a duration such as "3600s"' }]);
  return Math.min(Number(`${m[1]}.${m[2] ?? '0'}`), maxOverlapSeconds);
}

const live = (expireTime: string | undefined, nowMs: number) => !expireTime || Date.parse(expireTime) > nowMs;

/** A new token and the fields that store it; `previous` carries the old token into an overlap. */
export function issueToken(
  current: ScimFields,
  expireTime: string | undefined,
  overlap?: number,
): { token: string; fields: ScimFields; previousTokenExpireTime?: string } {
  const token = `cgscim_${randomBytes(32).toString('hex')}`;
  const nowMs = Date.now();
  const state = current.scim ?? {};
  // The old token keeps working for the overlap, but never longer than it would have (a dead one stays dead).
  const oldAlive =
    overlap !== undefined && overlap > 0 && !!current.scimTokenDigest && live(state.tokenExpireTime, nowMs);
  const overlapEnd = oldAlive
    ? new Date(
        Math.min(nowMs + overlap * 1000, state.tokenExpireTime ? Date.parse(state.tokenExpireTime) : Infinity),
      ).toISOString()
    : undefined;
  const scim: ScimState = {
    enabled: state.enabled ?? false,
    ...(expireTime ? { tokenExpireTime: expireTime } : {}),
    ...(overlapEnd ? { previousTokenExpireTime: overlapEnd } : {}),
    credentialState: overlapEnd ? 'CREDENTIAL_STATE_ROTATING' : 'CREDENTIAL_STATE_LIVE',
    etag: newEtag(),
  };
  return {
    token,
    fields: {
      scim,
      scimTokenDigest: digest(token),
      scimPreviousTokenDigest: overlapEnd ? current.scimTokenDigest! : null,
    },
    ...(overlapEnd ? { previousTokenExpireTime: overlapEnd } : {}),
  };
}

/** Whether a token was ever issued and not revoked since. */
export const hasToken = (current: ScimFields) => !!current.scimTokenDigest;

/** Both tokens dead at once; the switch is left as it is. */
export function revoked(current: ScimFields): ScimFields {
  return {
    scim: { enabled: current.scim?.enabled ?? false, credentialState: 'CREDENTIAL_STATE_REVOKED', etag: newEtag() },
    scimTokenDigest: null,
    scimPreviousTokenDigest: null,
  };
}
