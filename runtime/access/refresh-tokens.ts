// Refresh tokens (the reference's RawToken.refresh_token and ExchangeRefreshToken): what lets a caller get a new
// token of ours without presenting its upstream token again. Opaque (never a JWT, so never taken for an access
// token), stored only as their SHA-256, single use and rotated on use. Every token of one exchange belongs to one
// family, which ends when the exchange's lifetime does (rotation never extends it); a token presented twice means
// that two parties hold the family (OAuth 2.0 Security BCP §4.14): the family dies. A family dies too when its
// identity is deleted or its claimMatch (or static keys) changes (what the upstream token was checked against is
// no longer true).
import { createHash, randomBytes } from 'node:crypto';
import { and, equal, isNull, oneOf, range } from '../tables/condition.js';
import { unauthenticated } from '../model/errors.js';
import { now } from '../model/records.js';
import type { Resources } from '../resources/standard-methods.js';
import type { Sql } from '../storage/sql.js';
import { refreshTokenEntity, type RefreshTokenRecord } from '../storage/refresh-token-table.js';

/** The unused families one identity may hold; past it the oldest are dropped (a robot exchanging each minute). */
export const maxFamiliesPerIdentity = 50;
const prefix = 'cgrt_';
const shape = /^cgrt_[A-Za-z0-9_-]{43}$/;

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/** JSON with keys sorted at every level: PostgreSQL's jsonb does not keep the order a claimMatch was written in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter(
        (k) => (value as Record<string, unknown>)[k] !== undefined && (value as Record<string, unknown>)[k] !== null,
      )
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/** What an identity's tokens were checked against, as one comparable value. */
export const claimMatchDigest = (claimMatch: unknown) => digest(canonical(claimMatch ?? null));

/**
 * What an exchange checked the upstream token against: the identity's claimMatch, or its static keys (kept as
 * { staticKeys }, so that neither is taken for the other). A change of it ends the identity's families.
 */
export const assumedBy = (identity: { claimMatch?: unknown; staticKeys?: unknown }): unknown =>
  identity.claimMatch ?? (identity.staticKeys ? { staticKeys: identity.staticKeys } : undefined);

/** A refresh token's one refusal: the caller learns not which of unknown, used, expired or dead it was. */
const refusal = () => unauthenticated('the refresh token is not valid; exchange an upstream token again');

export interface Redeemed {
  identityUid: string;
  audience: string | undefined;
  /** the family's next token */
  refreshToken: string;
  refreshExpiry: string;
}

export class RefreshTokens {
  /** lifetimeSeconds: how long a family lives from its exchange; 0: no refresh tokens are issued. */
  constructor(
    private readonly resources: Resources,
    readonly lifetimeSeconds: number,
  ) {}

  private get table() {
    return this.resources.table(refreshTokenEntity.meta.className);
  }

  private async insert(sql: Sql, family: Omit<RefreshTokenRecord, 'uid' | 'usedTime' | 'createTime'>) {
    const token = prefix + randomBytes(32).toString('base64url');
    await this.table.insert(sql, { ...family, uid: digest(token), usedTime: null, createTime: now() });
    return token;
  }

  /**
   * A new family for an exchange of this identity, undefined when refresh tokens are off. Ended families are
   * removed here, and the identity's oldest live ones past maxFamiliesPerIdentity.
   */
  async issue(
    identityUid: string,
    claimMatch: unknown,
    audience: string | undefined,
  ): Promise<{ token: string; expiry: string } | undefined> {
    if (this.lifetimeSeconds === 0) return undefined;
    // Whole seconds, as a token's exp: the same instant over JSON and as a protobuf Timestamp.
    const expireTime = new Date((Math.floor(Date.now() / 1000) + this.lifetimeSeconds) * 1000).toISOString();
    return this.resources.transaction(async (sql) => {
      await this.table.deleteWhere(sql, range('expireTime', { lt: now() }));
      const older = await this.table.find(
        and(equal('identityUid', identityUid), isNull('usedTime')),
        [{ property: 'createTime', desc: true }],
        1000,
        maxFamiliesPerIdentity - 1,
        sql,
      );
      if (older.length)
        await this.table.deleteWhere(sql, oneOf('family', [...new Set(older.map((r) => r.family as string))]));
      const token = await this.insert(sql, {
        family: randomBytes(16).toString('hex'),
        identityUid,
        claimMatch: claimMatchDigest(claimMatch),
        audience: audience ?? null,
        expireTime,
      });
      return { token, expiry: expireTime };
    });
  }

  /**
   * The family's next token for a live, unused one; the token used. A used token kills its family, as does an
   * identity deleted or whose claimMatch changed; the refusal is one answer, after the deaths are committed.
   */
  async redeem(token: string): Promise<Redeemed> {
    if (this.lifetimeSeconds === 0 || !shape.test(token)) throw refusal();
    const uid = digest(token);
    const outcome = await this.resources.transaction(async (sql): Promise<Redeemed | undefined> => {
      const row = (await this.table.get(uid, sql)) as RefreshTokenRecord | null;
      if (!row) return undefined;
      const kill = () => this.table.deleteWhere(sql, equal('family', row.family)).then(() => undefined);
      if (row.usedTime !== null || row.expireTime <= now()) return kill();
      const identity = await this.resources.tableOf('identities').get(row.identityUid, sql);
      if (!identity || claimMatchDigest(assumedBy(identity)) !== row.claimMatch) return kill();
      await this.table.update(sql, uid, { usedTime: now() });
      const { family, identityUid, claimMatch, audience, expireTime } = row;
      const refreshToken = await this.insert(sql, { family, identityUid, claimMatch, audience, expireTime });
      return { identityUid, audience: audience ?? undefined, refreshToken, refreshExpiry: expireTime };
    });
    if (!outcome) throw refusal();
    return outcome;
  }
}
