// Every class of token attack is 401 UNAUTHENTICATED, structured, on every kind of route: one that needs a
// capability, one that needs only a caller, and one that needs nothing.
import { createHmac } from 'node:crypto';
import { SignJWT, generateKeyPair, importJWK, type JWK } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clockSkewSeconds, lowS, maxTokenSeconds } from '../runtime/access/issuer.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let signingKey: { kid: string; privateJwk: JWK; publicJwk: JWK };
const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

test.before(async () => {
  s = await startTestServer();
  const keys = await s.signingKeys();
  signingKey = keys[keys.length - 1];
});
test.after(async () => s.stop());

/** A token signed with the server's own key: header and claims as given (defaults as the server issues them). */
async function ours(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const t = now();
  const payload = { iss: s.url, aud: s.url, sub: s.bootstrap.owner, iat: t, exp: t + 600, ...claims };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete (payload as Record<string, unknown>)[k];
  const token = await new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: signingKey.kid, ...header } as never)
    .sign(await importJWK(signingKey.privateJwk, 'ES256'));
  return lowS(token);
}

/** The same signature with s replaced by n - s: it verifies too, but our issuer never writes it. */
function highS(token: string): string {
  const [h, p, sig] = token.split('.');
  const raw = Buffer.from(sig, 'base64url');
  const sValue = BigInt(`0x${raw.subarray(32).toString('hex')}`);
  const flipped = Buffer.from((n - sValue).toString(16).padStart(64, '0'), 'hex');
  return `${h}.${p}.${Buffer.concat([raw.subarray(0, 32), flipped]).toString('base64url')}`;
}

const routes = [
  '/registry/v2/repos',
  '/ping/v2/ping',
  '/iam/v2/identities:lookupIdentity?issuer=x&subject=y',
  '/registry/v1/repos',
];

async function expectRefused(what: string, authorization: string, message?: RegExp) {
  for (const path of routes) {
    const r = await s.call('GET', path, undefined, { authorization });
    assert.is(r.status, 401, `${what} on ${path}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.code, 16, `${what} on ${path}`);
    assert.type(r.body.message, 'string');
    if (!path.includes('/v1/'))
      assert.is(
        r.body.details.filter((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo').length,
        1,
        what,
      );
    if (message) assert.match(r.body.message, message, `${what} on ${path}`);
  }
}

test('the control: a token as the server issues it works on every route', async () => {
  for (const path of routes) {
    const r = await s.call('GET', path, undefined, { authorization: `Bearer ${await ours()}` });
    assert.ok(r.status < 400 || r.status === 404, `${path}: ${r.status} ${JSON.stringify(r.body)}`);
  }
});

test('the scheme in any case, with one or more spaces before the token and any after it', async () => {
  const good = await ours();
  for (const authorization of [`bearer ${good}`, `BEARER ${good}`, `Bearer   ${good}`, `Bearer ${good}   `]) {
    const r = await s.call('GET', '/registry/v2/repos', undefined, { authorization });
    assert.is(r.status, 200, `${JSON.stringify(authorization.replace(good, '<token>'))}: ${JSON.stringify(r.body)}`);
  }
});

test('the server signs with low-S only, so it never refuses its own tokens', async () => {
  for (let i = 0; i < 40; i++) {
    const t = await s.mint(s.bootstrap.owner);
    const sValue = BigInt(`0x${Buffer.from(t.split('.')[2], 'base64url').subarray(32).toString('hex')}`);
    assert.ok(sValue <= n >> 1n, 'low S');
    assert.is((await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${t}` })).status, 200);
  }
});

test('signature attacks: none, HMAC with the public key, another key under our kid, high-S, tampering', async () => {
  const good = await ours();
  const [h, p] = good.split('.');
  await expectRefused('alg none', `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${p}.`);
  const hsHeader = b64({ alg: 'HS256', typ: 'JWT', kid: signingKey.kid });
  const hmac = createHmac('sha256', JSON.stringify(signingKey.publicJwk))
    .update(`${hsHeader}.${p}`)
    .digest('base64url');
  await expectRefused('HS256 keyed with the public JWK', `Bearer ${hsHeader}.${p}.${hmac}`);
  const { privateKey } = await generateKeyPair('ES256');
  const forged = lowS(
    await new SignJWT(JSON.parse(Buffer.from(p, 'base64url').toString()))
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: signingKey.kid })
      .sign(privateKey),
  );
  await expectRefused('another key under our kid', `Bearer ${forged}`, /signature/);
  await expectRefused('high-S form of a valid signature', `Bearer ${highS(good)}`, /low-S/);
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
  // The good token verified and kept first: the swapped one ends as it does, where the server keeps verified tokens.
  assert.is((await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${good}` })).status, 200);
  await expectRefused(
    'payload swapped under a valid signature',
    `Bearer ${h}.${b64({ ...claims, sub: 'f'.repeat(40) })}.${good.split('.')[2]}`,
    /signature/,
  );
});

test('header attacks: unknown kid, embedded or remote keys, crit, missing typ', async () => {
  await expectRefused('unknown kid', `Bearer ${await ours({}, { kid: 'nope' })}`, /not signed by a key of this server/);
  await expectRefused('embedded jwk', `Bearer ${await ours({}, { jwk: signingKey.publicJwk })}`, /header/);
  await expectRefused('remote jku', `Bearer ${await ours({}, { jku: 'http://127.0.0.1:1/jwks' })}`, /header/);
  await expectRefused('x5u', `Bearer ${await ours({}, { x5u: 'http://127.0.0.1:1/cert' })}`, /header/);
  await expectRefused(
    'crit b64, which jose accepts',
    `Bearer ${await ours({}, { crit: ['b64'], b64: true })}`,
    /header/,
  );
  await expectRefused('missing typ', `Bearer ${await ours({}, { typ: undefined })}`, /header/);
});

test('claim attacks: time, lifetime, extra or missing claims, audience and issuer', async () => {
  const t = now();
  await expectRefused('expired', `Bearer ${await ours({ iat: t - 1200, exp: t - 600 })}`, /expired/);
  await expectRefused(
    'issued in the future',
    `Bearer ${await ours({ iat: t + clockSkewSeconds + 60, exp: t + 1200 })}`,
    /future/,
  );
  await expectRefused(
    'lasting over an hour',
    `Bearer ${await ours({ iat: t, exp: t + maxTokenSeconds + 1 })}`,
    /longer/,
  );
  await expectRefused('no iat', `Bearer ${await ours({ iat: undefined })}`, /claims/);
  await expectRefused('no exp', `Bearer ${await ours({ exp: undefined })}`, /claims/);
  await expectRefused('an extra claim', `Bearer ${await ours({ admin: true })}`, /claims/);
  await expectRefused('nbf', `Bearer ${await ours({ nbf: t })}`, /claims/);
  await expectRefused('audience as an array', `Bearer ${await ours({ aud: [s.url, 'x'] })}`, /audience/);
  await expectRefused('fractional times', `Bearer ${await ours({ iat: t + 0.5 })}`, /whole seconds/);
  await expectRefused('wrong audience', `Bearer ${await ours({ aud: 'https://elsewhere' })}`, /aud/);
  await expectRefused(
    'wrong issuer',
    `Bearer ${await ours({ iss: 'https://elsewhere' })}`,
    new RegExp(`iss.*${s.url}`),
  );
  // Within the allowed skew, a token from a clock slightly ahead is accepted.
  const ahead = await ours({ iat: t + clockSkewSeconds - 10, exp: t + 600 });
  assert.is((await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${ahead}` })).status, 200);
});

test('subject attacks: a deleted identity, one that never existed, not a uid', async () => {
  const created = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'short lived' });
  assert.is(created.status, 200);
  const token = await s.mint(created.body.uid);
  assert.is(
    (await s.call('GET', '/ping/v2/ping', undefined, { authorization: `Bearer ${token}` })).status,
    200,
    'works while it exists',
  );
  assert.is((await s.call('DELETE', `/iam/v2/identities/${created.body.uid}`)).status, 200);
  await expectRefused('deleted identity', `Bearer ${token}`, /not an identity of this server/);
  await expectRefused(
    'never existed',
    `Bearer ${await ours({ sub: 'e'.repeat(40) })}`,
    /not an identity of this server/,
  );
  await expectRefused('not a uid', `Bearer ${await ours({ sub: 'admin' })}`, /subject/);
});

test('encoding attacks: padding, non-canonical base64url, oversized, malformed Authorization', async () => {
  const good = await ours();
  const [h, p, sig] = good.split('.');
  await expectRefused('padded', `Bearer ${h}.${p}.${sig}=`, /malformed/);
  // The last character of a 64-byte signature carries 2 unused bits: setting them decodes to the same bytes.
  const last = sig[sig.length - 1];
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const sibling = alphabet[(alphabet.indexOf(last) & ~3) | ((alphabet.indexOf(last) + 1) & 3)];
  await expectRefused('non-canonical base64url', `Bearer ${h}.${p}.${sig.slice(0, -1)}${sibling}`, /malformed/);
  await expectRefused('oversized', `Bearer ${h}.${b64({ pad: 'x'.repeat(5000) })}.${sig}`, /malformed/);
  await expectRefused('garbage', 'Bearer not.a.jwt', /malformed/);
  // Signed by our key, but not as JSON.stringify writes: a repeated subject, spaces.
  const key = await importJWK(signingKey.privateJwk, 'ES256');
  const signRaw = async (payloadText: string) => {
    const input = `${b64({ alg: 'ES256', kid: signingKey.kid, typ: 'JWT' })}.${b64(payloadText)}`;
    const raw = new Uint8Array(
      await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key as CryptoKey, new TextEncoder().encode(input)),
    );
    return lowS(`${input}.${Buffer.from(raw).toString('base64url')}`);
  };
  const t = now();
  const claims = `"iss":"${s.url}","sub":"${s.bootstrap.owner}","aud":"${s.url}","iat":${t},"exp":${t + 600}`;
  assert.is(
    (await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${await signRaw(`{${claims}}`)}` }))
      .status,
    200,
    'the control',
  );
  await expectRefused(
    'a repeated claim',
    `Bearer ${await signRaw(`{"sub":"${'e'.repeat(40)}",${claims}}`)}`,
    /malformed/,
  );
  await expectRefused('spaces in the JSON', `Bearer ${await signRaw(`{ ${claims} }`)}`, /malformed/);
  await expectRefused('two tokens', `Bearer ${good} ${good}`, /Bearer <token>/);
  await expectRefused('a tab inside the token', `Bearer ${h}.${p}\t.${sig}`, /Bearer <token>/);
  await expectRefused('a no-break space inside the token', `Bearer ${h}.${p}\xa0.${sig}`, /Bearer <token>/);
  await expectRefused('a tab after the scheme', `Bearer\t${good}`, /Bearer <token>/);
  await expectRefused('no token', 'Bearer ', /Bearer <token>/);
  await expectRefused('Basic scheme', `Basic ${good}`, /Bearer <token>/);
});

test.run();
