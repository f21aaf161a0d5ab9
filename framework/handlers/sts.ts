// Token exchange (POST or GET /sts/exchange?identity=<uid>[&aud=...]): an upstream OIDC token, presented as the
// bearer token, is exchanged for a token of ours for an identity whose claimMatch it satisfies, or whose static
// keys signed it. Upstream
// keys are found through the issuer's discovery document, under the outbound address policy, and cached; a slow
// or dead issuer cannot hang us. Every check is here, in exchange(), for both transports (HTTP and gRPC).
import type { HttpContext } from '../../runtime/http/context.js';
import { Router } from '../../runtime/http/router.js';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
} from 'jose';
import { recordedEmail } from '../../runtime/access/email-domain.js';
import { bearerToken } from '../../runtime/access/bearer-token.js';
import { ApiError, invalidArgument, permissionDenied, unauthenticated } from '../../runtime/model/errors.js';
import { clockSkewSeconds, type TokenIssuer } from '../../runtime/access/issuer.js';
import { now, type RecordTypes } from '../../runtime/model/records.js';
import type { Resources } from '../../runtime/resources/standard-methods.js';
import { isUidPath } from '../../runtime/model/uid.js';
import { checkParameterNames } from '../../runtime/pipeline/validation.js';
import {
  OutboundFailure,
  outboundRequest,
  RefusedAddress,
  type OutboundPolicy,
} from '../../runtime/access/outbound.js';
import { matchesPattern, maxMatchedLength } from '../../runtime/access/safe-pattern.js';
import type { ExchangeRequest, RefreshRequest, TokenPair } from '../../runtime/grpc/token-service.js';
import { assumedBy, type RefreshTokens } from '../../runtime/access/refresh-tokens.js';

const fetchTimeoutMs = 5000;
const discoveryTtlMs = 10 * 60 * 1000;
/** The largest discovery document or key set read from an issuer. */
export const maxIssuerDocumentBytes = 64 * 1024;
/** Issuers whose key sets are kept; beyond it the least recently used is dropped. */
export const maxKeySets = 100;

// The runtime's record type (not one API's generated/): a new API's project typechecks with its own.
type ClaimMatch = NonNullable<RecordTypes['identities']['claimMatch']>;
type StaticKeys = NonNullable<RecordTypes['identities']['staticKeys']>;
type KeySet = ReturnType<typeof createRemoteJWKSet>;

function unavailable(message: string): ApiError {
  return new ApiError('UNAVAILABLE', `Unavailable: ${message}`);
}

/**
 * The one answer for every reason a token cannot assume an identity (no such identity, no claimMatch, another
 * issuer, subject, audience or claim, a signature that does not verify, an issuer the address policy refuses):
 * an anonymous caller learns nothing of the identity.
 */
const refusal = () => permissionDenied('the presented token cannot assume this identity');

/** Refused inside the exchange; answered as refusal() (a distinct class only so that it is not taken for an outage). */
class Mismatch extends Error {}

/** A claim's value as text to compare: strings, numbers and booleans; anything else matches nothing. */
function claimText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** An exact value or a pattern (a whole-value match, safe by runtime/access/safe-pattern.ts); neither: no match. */
function matches(value: unknown, exact: string | undefined, pattern: string | undefined): boolean {
  const text = claimText(value);
  if (text === undefined || text.length > maxMatchedLength) return false;
  if (exact) return text === exact;
  if (pattern) return matchesPattern(pattern, text);
  return false;
}

/** Whether the verified claims meet the identity's claimMatch: subject, audience, and every declared claim. */
function claimsMatch(payload: JWTPayload, claimMatch: ClaimMatch, defaultAudience: string): boolean {
  if (!matches(payload.sub, claimMatch.subject, claimMatch.subjectPattern)) return false;
  const auds = [payload.aud ?? []].flat();
  const audienceOk =
    claimMatch.audience || claimMatch.audiencePattern
      ? auds.some((a) => matches(a, claimMatch.audience, claimMatch.audiencePattern))
      : auds.includes(defaultAudience);
  if (!audienceOk) return false;
  for (const [name, value] of Object.entries(claimMatch.claims ?? {}))
    if (!Object.hasOwn(payload, name) || !matches(payload[name], value, undefined)) return false;
  for (const [name, pattern] of Object.entries(claimMatch.claimPatterns ?? {}))
    if (!Object.hasOwn(payload, name) || !matches(payload[name], undefined, pattern)) return false;
  return true;
}

/** A JSON document fetched from an issuer; failures say what failed, never what the issuer answered. */
async function issuerDocument(url: URL, policy: OutboundPolicy, signal?: AbortSignal): Promise<unknown> {
  const res = await outboundRequest(url, policy, {
    headers: { accept: 'application/json' },
    timeoutMs: fetchTimeoutMs,
    maxBytes: maxIssuerDocumentBytes,
    signal,
  });
  if (res.status !== 200)
    throw new OutboundFailure(
      `${url.href} answered HTTP ${res.status}${res.status >= 300 && res.status < 400 ? ' (redirects are not followed)' : ''}`,
    );
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new OutboundFailure(`${url.href} did not answer a JSON document`);
  }
}

export class TokenExchange {
  /** Key sets by issuer, least recently used first. */
  private readonly keySets = new Map<string, { jwks: KeySet; fetched: number }>();

  constructor(
    private readonly resources: Resources,
    private readonly issuer: () => TokenIssuer,
    private readonly outbound: OutboundPolicy,
    private readonly refreshTokens: RefreshTokens,
  ) {}

  /** How many issuers' key sets are kept (tests count them). */
  get keySetCount(): number {
    return this.keySets.size;
  }

  /**
   * The audiences a token of ours may be minted for: the one our tokens are for (TOKEN_AUDIENCE) and our issuer
   * URL. Never another's (a webhook receiver's, a customer's): the exchange must not mint tokens that another
   * service would accept.
   */
  private mintableAudience(aud: string | undefined): string | undefined {
    const { audience, issuer } = this.issuer();
    if (aud === undefined || aud === audience || aud === issuer) return aud;
    throw invalidArgument([
      { field: 'aud', description: `aud may only be ${[...new Set([audience, issuer])].join(' or ')}` },
    ]);
  }

  private async keySet(iss: string): Promise<KeySet> {
    const cached = this.keySets.get(iss);
    if (cached) {
      this.keySets.delete(iss);
      if (Date.now() - cached.fetched < discoveryTtlMs) {
        this.keySets.set(iss, cached);
        return cached.jwks;
      }
    }
    const discoveryUrl = `${iss.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    // An identity may name any text as its issuer: one that is no URL is a token that cannot assume it.
    if (!URL.canParse(discoveryUrl)) throw new Mismatch('the issuer is not a URL');
    const discovery = (await issuerDocument(new URL(discoveryUrl), this.outbound)) as { jwks_uri?: unknown } | null;
    if (typeof discovery?.jwks_uri !== 'string' || !URL.canParse(discovery.jwks_uri))
      throw new OutboundFailure(`the discovery document of ${iss} has no jwks_uri`);
    const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri), {
      timeoutDuration: fetchTimeoutMs,
      cooldownDuration: 30_000,
      cacheMaxAge: discoveryTtlMs,
      // jose's own fetch would go anywhere and follow redirects: ours keeps to the policy.
      [customFetch]: async (url: string, init: { signal?: AbortSignal }) => {
        const json = await issuerDocument(new URL(url), this.outbound, init.signal);
        return { status: 200, json: async () => json } as Response;
      },
    });
    if (this.keySets.size >= maxKeySets) this.keySets.delete(this.keySets.keys().next().value!);
    this.keySets.set(iss, { jwks, fetched: Date.now() });
    return jwks;
  }

  /** The claims of an upstream token of an issuer the identity accepts, verified with that issuer's keys. */
  private async verifyUpstream(upstreamToken: string, iss: string): Promise<JWTPayload> {
    try {
      const jwks = await this.keySet(iss);
      return (
        await jwtVerify(upstreamToken, jwks, { issuer: iss, clockTolerance: clockSkewSeconds, requiredClaims: ['exp'] })
      ).payload;
    } catch (e) {
      if (e instanceof RefusedAddress) throw new Mismatch(e.message);
      if (e instanceof OutboundFailure) throw unavailable(`cannot read the keys of ${iss}: ${e.message}`);
      if (e instanceof errors.JWKSTimeout) throw unavailable(`the key set of ${iss} did not answer in time`);
      if (e instanceof errors.JOSEError) throw new Mismatch(e.code);
      throw e;
    }
  }

  /**
   * The claims of a token for an identity of static keys: its issuer and subject exactly, signed by one of its keys
   * (a JWKS document, no discovery), for one of its audiences (none: our issuer URL), before the keys expire.
   */
  private async verifyStatic(upstreamToken: string, iss: string, keys: StaticKeys): Promise<JWTPayload> {
    if (iss !== keys.issuer) throw refusal();
    if (keys.expirationTime && keys.expirationTime <= now()) throw refusal();
    let jwks: JSONWebKeySet;
    try {
      jwks = JSON.parse(keys.issuerKeys) as JSONWebKeySet;
    } catch {
      throw refusal();
    }
    const audience = keys.audiences?.length ? keys.audiences : this.issuer().issuer;
    try {
      const checks = { issuer: keys.issuer, subject: keys.subject, audience, requiredClaims: ['exp'] };
      return (await jwtVerify(upstreamToken, createLocalJWKSet(jwks), { ...checks, clockTolerance: clockSkewSeconds }))
        .payload;
    } catch (e) {
      if (e instanceof errors.JOSEError || e instanceof TypeError) throw refusal();
      throw e;
    }
  }

  /** The claims of the upstream token, checked against the identity's claimMatch: else the one refusal. */
  private async verifyClaimMatch(upstreamToken: string, iss: string, claimMatch: ClaimMatch): Promise<JWTPayload> {
    if (!matches(iss, claimMatch.issuer, claimMatch.issuerPattern)) throw refusal();
    let payload: JWTPayload;
    try {
      payload = await this.verifyUpstream(upstreamToken, iss);
    } catch (e) {
      if (e instanceof Mismatch) throw refusal();
      throw e;
    }
    if (!claimsMatch(payload, claimMatch, this.issuer().issuer)) throw refusal();
    return payload;
  }

  /**
   * Our token for identityUid, for an upstream token that satisfies its claimMatch, or is signed by its static keys. What the token alone shows
   * (not a JWT, no exp, expired, issued in the future) is said; anything that depends on the identity is the one
   * refusal. The issuer is compared before its keys are fetched (no identity, no fetch); the rest is compared
   * only once the signature verifies.
   */
  async exchange(
    upstreamToken: string,
    identityUid: string,
    audience: string | undefined,
  ): Promise<{ token: string; expiry: string; refreshToken?: string }> {
    const aud = this.mintableAudience(audience);
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(upstreamToken);
    } catch {
      throw unauthenticated('the presented token is not a JWT');
    }
    const nowSeconds = Date.now() / 1000;
    if (typeof unverified.exp !== 'number') throw unauthenticated('the presented token has no expiry (exp)');
    if (unverified.exp <= nowSeconds) throw unauthenticated('the presented token has expired');
    if (typeof unverified.iat === 'number' && unverified.iat > nowSeconds + clockSkewSeconds)
      throw unauthenticated('the presented token was issued in the future (iat)');
    const { iss } = unverified;
    if (typeof iss !== 'string' || iss.length > maxMatchedLength)
      throw unauthenticated('the presented token has no usable issuer (iss)');
    const identity = isUidPath(identityUid) ? await this.resources.tableOf('identities').get(identityUid) : null;
    let payload: JWTPayload;
    if (identity?.claimMatch) payload = await this.verifyClaimMatch(upstreamToken, iss, identity.claimMatch);
    else if (identity?.staticKeys) payload = await this.verifyStatic(upstreamToken, iss, identity.staticKeys);
    else throw refusal();
    // The email the upstream token carries is kept with the issuer that vouched for it
    // (runtime/access/email-domain.ts).
    const email = recordedEmail(payload, iss);
    await this.resources.write({}, (writes) =>
      writes.update('identities', identityUid, { lastSeenTime: now(), ...email }),
    );
    const minted = await this.issuer().mint(identityUid, undefined, aud);
    // RawToken.refresh_token: a new family for this exchange (runtime/access/refresh-tokens.ts), unless turned off.
    const refresh = await this.refreshTokens.issue(identityUid, assumedBy(identity!), aud);
    return refresh ? { ...minted, refreshToken: refresh.token } : minted;
  }

  /**
   * ExchangeRefreshToken, for either transport: the refresh token (the bearer) for a new token of its identity and
   * the family's next refresh token. The audience is checked before the refresh token is spent.
   */
  async refresh(refreshToken: string, request: RefreshRequest): Promise<TokenPair> {
    if (request.aud.length > 1)
      throw invalidArgument([{ field: 'aud', description: 'at most one audience: a token of this server has one' }]);
    const asked = this.mintableAudience(request.aud[0] || undefined);
    const redeemed = await this.refreshTokens.redeem(refreshToken);
    const token = await this.issuer().mint(redeemed.identityUid, undefined, asked ?? redeemed.audience);
    return { token, refreshToken: { token: redeemed.refreshToken, expiry: redeemed.refreshExpiry } };
  }

  /** The exchange as either transport asks for it (HTTP's query, gRPC's ExchangeRequest): one identity, one audience. */
  exchangeFor(
    upstreamToken: string,
    request: ExchangeRequest,
  ): Promise<{ token: string; expiry: string; refreshToken?: string }> {
    if (!request.identity)
      throw invalidArgument([
        { field: 'identity', description: 'identity (the uid of the identity to assume) is required' },
      ]);
    if (request.aud.length > 1)
      throw invalidArgument([{ field: 'aud', description: 'at most one audience: a token of this server has one' }]);
    return this.exchange(upstreamToken, request.identity, request.aud[0] || undefined);
  }

  /**
   * The routes of the token service: GET and POST /sts/exchange, with another issuer's token as the bearer token;
   * POST /sts/exchange_refresh_token, with a refresh token as the bearer token; and the reference's headless
   * sessions, which need a browser login this server does not run, answered UNIMPLEMENTED.
   */
  router(): Router {
    const bearer = (ctx: HttpContext, what: string) => {
      const token = bearerToken(ctx.get('authorization'));
      if (token === undefined) throw unauthenticated(`present the ${what} as Authorization: Bearer <token>`);
      return token;
    };
    const audiences = (ctx: HttpContext) => [ctx.query.aud ?? []].flat().filter(Boolean);
    const exchange = async (ctx: HttpContext) => {
      const upstream = bearer(ctx, 'upstream OIDC token');
      // The reference's scope, cap, scopes and identityProvider are not served: refused, not ignored.
      checkParameterNames(ctx.query, ['identity', 'aud'], ['scope', 'cap', 'scopes', 'identityProvider']);
      const identity = [ctx.query.identity].flat()[0] ?? '';
      ctx.body = await this.exchangeFor(upstream, { identity, aud: audiences(ctx) });
    };
    const refresh = async (ctx: HttpContext) => {
      const refreshToken = bearer(ctx, 'refresh token');
      checkParameterNames(ctx.query, ['aud'], ['scope', 'cap', 'scopes']);
      ctx.body = await this.refresh(refreshToken, { aud: audiences(ctx) });
    };
    // As for any call, the request is checked before the answer: the reference's parameters pass, others do not.
    const notServed = (what: string, parameters: string[]) => (ctx: HttpContext) => {
      checkParameterNames(ctx.query, parameters);
      throw new ApiError('UNIMPLEMENTED', `Unimplemented: ${what}`);
    };
    return new Router()
      .get('/sts/exchange', exchange)
      .post('/sts/exchange', exchange)
      .post('/sts/exchange_refresh_token', refresh)
      .get(
        '/sts/headless_sessions',
        notServed('headless sessions need a browser login, which this server does not run', ['code']),
      );
  }
}
