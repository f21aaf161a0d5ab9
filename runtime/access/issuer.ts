// The server as its own OIDC issuer: ES256 signing keys (runtime/access/signing-keys.ts), tokens, JWKS, discovery.
import { createLocalJWKSet, errors, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import { ApiError, unauthenticated } from '../model/errors.js';
import { isUidPath } from '../model/uid.js';
import { keyFile, newKey, type KeySet, type SigningKeyStore, type StoredKey } from './signing-keys.js';

/** Tokens last at most this long. */
export const maxTokenSeconds = 3600;

/**
 * How far in the future a token's iat may be: the one allowance for clock skew (instances on several machines).
 * Expiry is exact: a verified token is cached until its exp, and must not verify again after it.
 */
export const clockSkewSeconds = 60;

/** The order of P-256: an ECDSA signature (r, s) verifies as (r, n - s) too, so only s <= n/2 is accepted. */
const p256Order = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const halfOrder = p256Order >> 1n;
const scalarOf = (bytes: Buffer) => BigInt(`0x${bytes.toString('hex')}`);

/** Rewrites an ES256 JWS so that its s is the low one of the two that verify. WebCrypto picks either. */
export function lowS(token: string): string {
  const [header, payload, signature] = token.split('.');
  const raw = Buffer.from(signature, 'base64url');
  const s = scalarOf(raw.subarray(32));
  if (s <= halfOrder) return token;
  const low = Buffer.from((p256Order - s).toString(16).padStart(64, '0'), 'hex');
  return `${header}.${payload}.${Buffer.concat([raw.subarray(0, 32), low]).toString('base64url')}`;
}

/** The longest token we would ever issue, with room to spare; longer ones are refused unread. */
const maxTokenLength = 2048;
const compactJws = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{86})$/;
const issuedHeader = ['alg', 'kid', 'typ'];
const issuedClaims = ['aud', 'exp', 'iat', 'iss', 'sub'];
const sameKeys = (o: object, keys: string[]) => Object.keys(o).sort().join() === keys.join();

/** A base64url part as our issuer writes it: decoding and encoding again gives the same text. */
function decodePart(part: string): Buffer | undefined {
  const bytes = Buffer.from(part, 'base64url');
  return bytes.toString('base64url') === part ? bytes : undefined;
}

/** A JSON object as JSON.stringify writes it (as jose does for us): no spaces, no repeated keys, no BOM. */
function parseJson(bytes: Buffer | undefined): Record<string, unknown> | undefined {
  try {
    const text = bytes?.toString('utf8') ?? '';
    const v = JSON.parse(text);
    if (JSON.stringify(v) !== text) return undefined;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why a token is not one our issuer could have written, before any signature check: the exact compact form,
 * header and claim set that mint() produces, a low-S signature, and times within our rules. jose checks the
 * signature, issuer, audience and expiry after this.
 */
function notOurs(token: string, nowSeconds: number): string | undefined {
  const m = token.length <= maxTokenLength ? compactJws.exec(token) : null;
  if (!m) return 'the token is malformed';
  const [header, payload, signature] = [parseJson(decodePart(m[1])), parseJson(decodePart(m[2])), decodePart(m[3])];
  if (!header || !payload || !signature || signature.length !== 64) return 'the token is malformed';
  if (
    !sameKeys(header, issuedHeader) ||
    header.alg !== 'ES256' ||
    header.typ !== 'JWT' ||
    typeof header.kid !== 'string'
  ) {
    return 'the token header is not one this server issues (alg ES256, typ JWT, kid)';
  }
  if (scalarOf(signature.subarray(32)) > halfOrder) return 'the token signature is not in canonical (low-S) form';
  return claimsNotOurs(payload, nowSeconds);
}

/** Why a token's claims are not the ones mint() writes, or times outside our rules. */
function claimsNotOurs(payload: Record<string, unknown>, nowSeconds: number): string | undefined {
  if (!sameKeys(payload, issuedClaims)) return `the token must carry exactly the claims ${issuedClaims.join(', ')}`;
  const { sub, aud, iat, exp } = payload;
  if (typeof sub !== 'string' || !isUidPath(sub)) return 'the token subject is not an identity uid';
  if (typeof aud !== 'string') return 'the token audience must be a single string';
  if (!Number.isSafeInteger(iat) || !Number.isSafeInteger(exp)) return 'the token iat and exp must be whole seconds';
  const [issued, expires] = [iat as number, exp as number];
  if (issued > nowSeconds + clockSkewSeconds) return 'the token was issued in the future (iat)';
  if (expires - issued > maxTokenSeconds) return `the token lasts longer than ${maxTokenSeconds} s (exp - iat)`;
  if (expires <= issued) return 'the token expires before it was issued';
  return undefined;
}

const maxVerifiedTokens = 10_000;

/**
 * Where a verified token is kept: the end of its signature, not the whole token. A map hashes its key at every
 * lookup of a new string, and hashing the whole token (600 characters) cost a microsecond of each request; the
 * kept token is compared whole, so a token ending as another does is only looked at, never taken for it.
 */
const verifiedKey = (token: string) => token.slice(-22);

export class TokenIssuer {
  private keys: StoredKey[] = [];
  private tag?: string;
  private checkedAt = 0;
  /** A look at the keys under way (a database's is a round trip): one at a time. */
  private looking?: Promise<void>;
  private watch?: NodeJS.Timeout;
  /** The verification key set, built once per load of the keys rather than per request. */
  private keySet?: ReturnType<typeof createLocalJWKSet>;
  /**
   * Tokens that verified, with their subject and expiry: a client sends the same token with every request, and
   * the signature check costs more than the rest of authentication. Emptied when the keys change.
   */
  private readonly verified = new Map<string, { token: string; subject: string; expiresMs: number }>();

  private constructor(
    private readonly store: SigningKeyStore,
    readonly issuer: string,
    readonly audience: string,
  ) {}

  /**
   * The issuer over its keys: a data directory's key file (made with a first key if there is none), or a store
   * of keys (the database's row, runtime/access/signing-keys.ts), looked at every watchMs.
   */
  static async open(keys: string | SigningKeyStore, issuer: string, audience: string): Promise<TokenIssuer> {
    const t = new TokenIssuer(typeof keys === 'string' ? await keyFile(keys) : keys, issuer, audience);
    t.adopt(await t.store.read());
    if (t.store.watchMs) {
      // A failed look (the database away a moment, the row unreadable) keeps the keys known: the next one tries
      // again. Told once when looks start failing, and once when they succeed again, not every watchMs.
      const look = () =>
        void Promise.resolve(t.refresh()).then(
          () => t.looked(undefined),
          (e: unknown) => t.looked((e as Error).message ?? String(e)),
        );
      t.watch = setInterval(look, t.store.watchMs).unref();
    }
    return t;
  }

  /** Why the last look at the stored keys failed; undefined when it succeeded. */
  private unreadable?: string;

  /**
   * Told when looks at the stored keys start failing (why) and when they succeed again (undefined): a server
   * that cannot read them keeps verifying and signing with the keys it read before.
   */
  keysUnreadable?: (problem: string | undefined) => void;

  private looked(problem: string | undefined): void {
    if (problem === this.unreadable) return;
    this.unreadable = problem;
    this.keysUnreadable?.(problem);
  }

  /** Stops looking at the keys (the database is about to close). */
  close(): void {
    clearInterval(this.watch);
  }

  private adopt(set: KeySet): void {
    if (set.tag === this.tag) return;
    this.keys = set.keys;
    this.keySet = createLocalJWKSet({ keys: this.keys.map((k) => k.publicJwk) });
    this.verified.clear();
    this.tag = set.tag;
  }

  /**
   * Picks up keys rotated by another process: a look at the tag (at most once a second unless forced), a read
   * only when it changed. Synchronous for a file; a promise where the store is a database.
   */
  private refresh(force = true): void | Promise<void> {
    const now = Date.now();
    if (this.looking || (!force && now - this.checkedAt < 1000)) return this.looking;
    this.checkedAt = now;
    const tag = this.store.tag();
    if (typeof tag === 'string') {
      if (tag !== this.tag) this.adopt(this.store.read() as KeySet);
      return;
    }
    this.looking = tag
      .then(async (t) => (t === this.tag ? undefined : this.adopt(await this.store.read())))
      .finally(() => (this.looking = undefined));
    return this.looking;
  }

  /** Before a use that must see the latest keys: a file is looked at now; a watched store is kept fresh already. */
  private fresh(): void {
    if (!this.store.watchMs) void this.refresh();
  }

  /** Adds a new signing key. Older keys stay published until every token they signed has expired. */
  async rotate(now = Date.now()): Promise<string> {
    const key = await newKey();
    const keep = (keys: StoredKey[]) =>
      keys.filter((_, i) => {
        const successor = keys[i + 1];
        return !successor || now - Date.parse(successor.createdAt) < maxTokenSeconds * 1000;
      });
    this.adopt(await this.store.change((keys) => [...keep(keys), key]));
    return key.kid;
  }

  jwks(): { keys: JWK[] } {
    this.fresh();
    return { keys: this.keys.map((k) => k.publicJwk) };
  }

  discovery(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/.well-known/jwks.json`,
      token_endpoint: `${this.issuer}/sts/exchange`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
    };
  }

  /** A token of ours; claims are added to the standard ones (a webhook delivery's, runtime/events/webhook-token.ts). */
  async mint(
    subject: string,
    ttlSeconds = maxTokenSeconds,
    audience: string | string[] = this.audience,
    claims: Record<string, unknown> = {},
  ): Promise<{ token: string; expiry: string }> {
    this.fresh();
    const key = this.keys[this.keys.length - 1];
    const now = Math.floor(Date.now() / 1000);
    const exp = now + Math.min(ttlSeconds, maxTokenSeconds);
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(await importJWK(key.privateJwk, 'ES256'))
      .then(lowS);
    return { token, expiry: new Date(exp * 1000).toISOString() };
  }

  /** A key this process has not loaded yet (rotated a moment ago elsewhere) is looked for once more. */
  private async verifySignature(token: string) {
    const options = { issuer: this.issuer, audience: this.audience, algorithms: ['ES256'] };
    try {
      return await jwtVerify(token, this.keySet!, options);
    } catch (e) {
      if (!(e instanceof errors.JWKSNoMatchingKey)) throw e;
      // Keys that cannot be read (a row changed by hand, sealed with a key SECRETS_KEY lacks) leave the token
      // refused by the keys known, as any token of an unknown key is, never a 500: the watcher reports them. A
      // database away is UNAVAILABLE (an ApiError), as for any request that needs it.
      await (async () => this.refresh())().catch((failed: unknown) => {
        if (failed instanceof ApiError) throw failed;
      });
      return await jwtVerify(token, this.keySet!, options);
    }
  }

  /** Told of every check: a token verified before (cached), verified now, or refused with a reason class. */
  observe?: (outcome: 'cached' | 'verified' | 'refused', reason?: string) => void;

  /**
   * The subject of a valid token of ours; UNAUTHENTICATED saying what is wrong otherwise. A token verified before
   * is answered at once, without a promise: that is nearly every request.
   */
  verify(token: string): string | Promise<string> {
    return this.knownSubject(token) ?? this.verifyNow(token);
  }

  /** The subject of a token verified before and not yet expired. */
  private knownSubject(token: string): string | undefined {
    // A watched store is kept fresh by its timer; a file is looked at here, at most once a second.
    if (!this.store.watchMs) void this.refresh(false);
    const known = this.verified.get(verifiedKey(token));
    if (known === undefined || known.token !== token) return undefined;
    if (known.expiresMs > Date.now()) {
      this.observe?.('cached');
      return known.subject;
    }
    this.verified.delete(verifiedKey(token));
    return undefined;
  }

  private async verifyNow(token: string): Promise<string> {
    try {
      return await this.check(token);
    } catch (e) {
      const refused = this.refusal(e);
      if (!refused) throw e;
      this.observe?.('refused', refused.reason);
      throw refused.error;
    }
  }

  /** Checks a token not verified before: its claims, then its signature; keeps it once verified. */
  private async check(token: string): Promise<string> {
    const refused = notOurs(token, Math.floor(Date.now() / 1000));
    if (refused) throw unauthenticated(refused);
    const { payload } = (await this.verifySignature(token)) as { payload: { sub: string; exp: number } };
    if (this.verified.size >= maxVerifiedTokens) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(verifiedKey(token), { token, subject: payload.sub, expiresMs: payload.exp * 1000 });
    this.observe?.('verified');
    return payload.sub;
  }

  /** A refusal as the caller is told it, and its class for the metrics; undefined for any other failure. */
  private refusal(e: unknown): { reason: string; error: ApiError } | undefined {
    if (e instanceof ApiError) return { reason: /malformed/.test(e.message) ? 'malformed' : 'not_ours', error: e };
    if (e instanceof errors.JWTExpired) return { reason: 'expired', error: unauthenticated('the token has expired') };
    if (e instanceof errors.JWTClaimValidationFailed) {
      const expected =
        e.claim === 'iss'
          ? `: this server issues tokens as ${this.issuer}`
          : e.claim === 'aud'
            ? `: this server accepts the audience ${this.audience}`
            : '';
      return {
        reason: 'claim',
        error: unauthenticated(`the token's ${e.claim} claim is not accepted here${expected}`),
      };
    }
    if (e instanceof errors.JWSSignatureVerificationFailed)
      return { reason: 'signature', error: unauthenticated('the token signature does not verify') };
    if (e instanceof errors.JWKSNoMatchingKey)
      return { reason: 'unknown_key', error: unauthenticated('the token was not signed by a key of this server') };
    if (e instanceof errors.JOSEError) return { reason: 'malformed', error: unauthenticated('the token is malformed') };
    return undefined;
  }
}
