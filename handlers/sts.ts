// Token exchange (POST or GET /sts/exchange?identity=<uid>[&aud=...]): an upstream OIDC token, presented as the
// bearer token, is exchanged for a token of ours for an identity whose claimMatch it satisfies. Upstream
// keys are found through the issuer's discovery document and cached; a slow or dead issuer cannot hang us.
import type { HttpContext } from '../runtime/http-context.js';
import { Router } from '../runtime/router.js';
import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import { recordedEmail } from '../runtime/email-domain.js';
import { ApiError, invalidArgument, notFound, permissionDenied, unauthenticated } from '../runtime/errors.js';
import { clockSkewSeconds, type TokenIssuer } from '../runtime/issuer.js';
import type { ApiModel } from '../runtime/model.js';
import { now } from '../runtime/records.js';
import type { Resources } from '../runtime/resources.js';
import type { IdentityRecord } from '../generated/types.js';
import { isUidPath } from '../runtime/uid.js';
import { checkParameterNames } from '../runtime/validation.js';

const fetchTimeoutMs = 5000;
const discoveryTtlMs = 10 * 60 * 1000;

function unavailable(message: string): ApiError {
  return new ApiError('UNAVAILABLE', `Unavailable: ${message}`);
}

/** Plain http is allowed only for issuers on this machine (tests, local identity providers). */
function checkTransport(url: URL, what: string): void {
  const loopback = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw unauthenticated(`${what} ${url.href} must use https`);
  }
}

/** Whole-string match of a claimMatch pattern. */
function matches(value: string | undefined, exact: string | undefined, pattern: string | undefined): boolean {
  if (exact) return value === exact;
  if (pattern) {
    try {
      return value !== undefined && new RegExp(`^(?:${pattern})$`).test(value);
    } catch {
      return false;
    }
  }
  return false;
}

export class TokenExchange {
  private readonly keySets = new Map<string, { jwks: ReturnType<typeof createRemoteJWKSet>; fetched: number }>();

  private readonly model: ApiModel;

  constructor(
    private readonly resources: Resources,
    private readonly issuer: () => TokenIssuer,
  ) {
    this.model = resources.model;
  }

  private async keySet(iss: string): Promise<ReturnType<typeof createRemoteJWKSet>> {
    const cached = this.keySets.get(iss);
    if (cached && Date.now() - cached.fetched < discoveryTtlMs) return cached.jwks;
    const discoveryUrl = new URL(`${iss.replace(/\/+$/, '')}/.well-known/openid-configuration`);
    checkTransport(discoveryUrl, 'the issuer');
    let discovery: { issuer?: string; jwks_uri?: string };
    try {
      const res = await fetch(discoveryUrl, { signal: AbortSignal.timeout(fetchTimeoutMs) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      discovery = (await res.json()) as typeof discovery;
    } catch (e) {
      throw unavailable(`cannot read the discovery document of ${iss} (${(e as Error).message})`);
    }
    if (!discovery.jwks_uri) throw unauthenticated(`the discovery document of ${iss} has no jwks_uri`);
    const jwksUrl = new URL(discovery.jwks_uri);
    checkTransport(jwksUrl, 'the key set');
    const jwks = createRemoteJWKSet(jwksUrl, {
      timeoutDuration: fetchTimeoutMs,
      cooldownDuration: 30_000,
      cacheMaxAge: discoveryTtlMs,
    });
    this.keySets.set(iss, { jwks, fetched: Date.now() });
    return jwks;
  }

  /** The claims of an upstream token whose issuer the identity accepts, verified with that issuer's keys. */
  private async verifyUpstream(
    upstreamToken: string,
    claimMatch: NonNullable<IdentityRecord['claimMatch']>,
    identityUid: string,
  ): Promise<JWTPayload> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(upstreamToken);
    } catch {
      throw unauthenticated('the presented token is not a JWT');
    }
    if (typeof unverified.iss !== 'string' || !matches(unverified.iss, claimMatch.issuer, claimMatch.issuerPattern)) {
      throw permissionDenied(`tokens of issuer ${String(unverified.iss)} cannot assume identity ${identityUid}`);
    }
    const jwks = await this.keySet(unverified.iss);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(upstreamToken, jwks, {
        issuer: unverified.iss,
        clockTolerance: clockSkewSeconds,
      }));
    } catch (e) {
      if (e instanceof errors.JWKSTimeout) throw unavailable(`the key set of ${unverified.iss} did not answer in time`);
      if (e instanceof errors.JWTExpired) throw unauthenticated('the presented token has expired');
      if (e instanceof errors.JOSEError) throw unauthenticated(`the presented token does not verify (${e.code})`);
      throw unavailable(`cannot fetch the key set of ${unverified.iss} (${(e as Error).message})`);
    }
    if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + clockSkewSeconds)
      throw unauthenticated('the presented token was issued in the future (iat)');
    return payload;
  }

  async exchange(
    upstreamToken: string,
    identityUid: string,
    audience: string | undefined,
  ): Promise<{ token: string; expiry: string }> {
    const identities = this.model.resources.identities;
    const identity = isUidPath(identityUid) ? await this.resources.tableOf('identities').get(identityUid) : null;
    if (!identity) throw notFound(identities.type, identityUid);
    const { claimMatch } = identity;
    if (
      !claimMatch ||
      !(claimMatch.issuer || claimMatch.issuerPattern) ||
      !(claimMatch.subject || claimMatch.subjectPattern)
    ) {
      throw permissionDenied(`identity ${identityUid} cannot be assumed with an OIDC token (it has no claimMatch)`);
    }
    const payload = await this.verifyUpstream(upstreamToken, claimMatch, identityUid);
    if (!matches(payload.sub, claimMatch.subject, claimMatch.subjectPattern)) {
      throw permissionDenied(`subject ${String(payload.sub)} cannot assume identity ${identityUid}`);
    }
    if (claimMatch.audience || claimMatch.audiencePattern) {
      const auds = [payload.aud ?? []].flat();
      if (!auds.some((a) => matches(a, claimMatch.audience, claimMatch.audiencePattern))) {
        throw permissionDenied(`the presented token's audience does not match identity ${identityUid}`);
      }
    }
    // The email the upstream token carries is kept with the issuer that vouched for it (runtime/email-domain.ts).
    const email = recordedEmail(payload, payload.iss!);
    await this.resources.write({}, (writes) =>
      writes.update('identities', identityUid, { lastSeenTime: now(), ...email }),
    );
    return this.issuer().mint(identityUid, undefined, audience);
  }

  /**
   * The routes of the exchange: GET and POST /sts/exchange, with another issuer's token as the bearer token; and
   * the reference's refresh and headless-session calls, which need what this issuer does not have (refresh
   * tokens, a browser login), answered UNIMPLEMENTED.
   */
  router(): Router {
    const exchange = async (ctx: HttpContext) => {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
      if (!m) throw unauthenticated('present the upstream OIDC token as Authorization: Bearer <token>');
      // The reference's scope, cap, scopes and identityProvider are not served: refused, not ignored.
      checkParameterNames(ctx.query, ['identity', 'aud'], ['scope', 'cap', 'scopes', 'identityProvider']);
      const identity = [ctx.query.identity].flat()[0];
      if (!identity)
        throw invalidArgument([
          { field: 'identity', description: 'identity (the uid of the identity to assume) is required' },
        ]);
      const aud = [ctx.query.aud].flat()[0] || undefined;
      ctx.body = await this.exchange(m[1], identity, aud);
    };
    // As for any call, the request is checked before the answer: the reference's parameters pass, others do not.
    const notServed = (what: string, parameters: string[]) => (ctx: HttpContext) => {
      checkParameterNames(ctx.query, parameters);
      throw new ApiError('UNIMPLEMENTED', `Unimplemented: ${what}`);
    };
    return new Router()
      .get('/sts/exchange', exchange)
      .post('/sts/exchange', exchange)
      .post(
        '/sts/exchange_refresh_token',
        notServed('this issuer issues no refresh tokens; exchange the upstream token again (/sts/exchange)', [
          'aud',
          'cap',
          'scope',
          'scopes',
        ]),
      )
      .get(
        '/sts/headless_sessions',
        notServed('headless sessions need a browser login, which this server does not run', ['code']),
      );
  }
}
