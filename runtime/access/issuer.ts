// The server as its own OIDC issuer: ES256 signing keys kept in the data directory, tokens, JWKS, discovery.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLocalJWKSet, errors, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import { ApiError, unauthenticated } from '../model/errors.js';
import { isUidPath } from '../model/uid.js';

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

interface StoredKey {
  kid: string;
  createdAt: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

async function newKey(): Promise<StoredKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomBytes(8).toString('hex');
  return {
    kid,
    createdAt: new Date().toISOString(),
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  };
}

const maxVerifiedTokens = 10_000;

export class TokenIssuer {
  private keys: StoredKey[] = [];
  private loadedAt = 0;
  private checkedAt = 0;
  /** The verification key set, built once per load of the key file rather than per request. */
  private keySet?: ReturnType<typeof createLocalJWKSet>;
  /**
   * Tokens that verified, with their subject and expiry: a client sends the same token with every request, and
   * the signature check costs more than the rest of authentication. Emptied when the keys change.
   */
  private readonly verified = new Map<string, { subject: string; expiresMs: number }>();

  private constructor(
    private readonly file: string,
    readonly issuer: string,
    readonly audience: string,
  ) {}

  /** Opens the key file of dataDir, creating the first key if there is none. */
  static async open(dataDir: string, issuer: string, audience: string): Promise<TokenIssuer> {
    const t = new TokenIssuer(join(dataDir, 'signing-keys.json'), issuer, audience);
    if (!existsSync(t.file)) {
      try {
        writeFileSync(t.file, JSON.stringify([await newKey()], null, 2), { mode: 0o600, flag: 'wx' });
      } catch (e) {
        // Another process (the token CLI, a second server) created it first: use theirs.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
    t.reload();
    return t;
  }

  /**
   * Picks up keys rotated by another process: a stat at most once a second (or when forced), a read only when
   * the file changed.
   */
  private reload(force = true): void {
    const now = Date.now();
    if (!force && now - this.checkedAt < 1000) return;
    this.checkedAt = now;
    const m = statSync(this.file).mtimeMs;
    if (m === this.loadedAt) return;
    this.keys = JSON.parse(readFileSync(this.file, 'utf8')) as StoredKey[];
    this.keySet = createLocalJWKSet({ keys: this.keys.map((k) => k.publicJwk) });
    this.verified.clear();
    this.loadedAt = m;
  }

  /** Adds a new signing key. Older keys stay published until every token they signed has expired. */
  async rotate(now = Date.now()): Promise<string> {
    this.reload();
    const key = await newKey();
    const keep = this.keys.filter((_, i) => {
      const successor = this.keys[i + 1];
      return !successor || now - Date.parse(successor.createdAt) < maxTokenSeconds * 1000;
    });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify([...keep, key], null, 2), { mode: 0o600 });
    renameSync(tmp, this.file);
    this.reload();
    return key.kid;
  }

  jwks(): { keys: JWK[] } {
    this.reload();
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
    this.reload();
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
      this.reload();
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
    this.reload(false);
    const known = this.verified.get(token);
    if (known === undefined) return undefined;
    if (known.expiresMs > Date.now()) {
      this.observe?.('cached');
      return known.subject;
    }
    this.verified.delete(token);
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
    this.verified.set(token, { subject: payload.sub, expiresMs: payload.exp * 1000 });
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
