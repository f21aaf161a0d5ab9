// The token exchange against a real OIDC issuer started on loopback by the test.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, readConfig } from '../runtime/operate/config.js';
import { createServer } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readStatusDetails } from '../runtime/grpc/status.js';
import { countConnections } from './support/connection-counter.js';
import { startUpstreamIssuer, type UpstreamClaims, type UpstreamIssuer } from './support/upstream-issuer.js';
import { startTestServer, type TestServer } from './support/server.js';
import { query } from './support/db.js';
import { maxIssuerDocumentBytes, maxKeySets, TokenExchange } from '../framework/handlers/sts.js';
import type { Resources } from '../runtime/resources/standard-methods.js';
import type { TokenIssuer } from '../runtime/access/issuer.js';
import { RefreshTokens } from '../runtime/access/refresh-tokens.js';
import { compiledPatternCount, matchesPattern, maxCompiledPatterns } from '../runtime/access/safe-pattern.js';

let s: TestServer;
let upstream: UpstreamIssuer;
let upstreamUrl: string;
/** A token of the upstream issuer, for this server unless aud says otherwise (test/support/upstream-issuer.ts). */
let sign: (claims: { aud?: string } & Omit<UpstreamClaims, 'aud'>) => Promise<string>;
let identityUid: string;
let viewerRole: string;

test.before(async () => {
  s = await startTestServer();
  upstream = await startUpstreamIssuer();
  upstreamUrl = upstream.url;
  sign = ({ aud = s.url, ...claims }) => upstream.sign({ ...claims, sub: claims.sub as string, aud });
  const org = s.bootstrap.organization;
  const id = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'ci',
    claimMatch: { issuer: upstreamUrl, subject: 'repo:acme/app:ref:main' },
  });
  identityUid = id.body.uid;
  viewerRole = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid, roleUid: viewerRole });
});
test.after(async () => {
  await s.stop();
  await upstream.stop();
});

const exchange = (token: string, query: string, method = 'POST') =>
  s.call(method, `/sts/exchange?${query}`, undefined, { authorization: `Bearer ${token}` });

test('an upstream token with the right subject is exchanged for a token that works on the API', async () => {
  const before = (await s.call('GET', `/iam/v2/identities/${identityUid}`)).body;
  assert.is(before.lastSeenTime, before.createTime, 'never seen: its create time');
  const r = await exchange(await sign({ sub: 'repo:acme/app:ref:main' }), `identity=${identityUid}`);
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.type(r.body.token, 'string');
  assert.ok(Date.parse(r.body.expiry) - Date.now() <= 3600_000 + 5000, 'at most an hour');
  const list = await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${r.body.token}` });
  assert.is(list.status, 200, JSON.stringify(list.body));
  const denied = await s.call(
    'POST',
    `/registry/v2/repos/${s.bootstrap.organization}`,
    { name: 'x' },
    { authorization: `Bearer ${r.body.token}` },
  );
  assert.is(denied.status, 403, 'the exchanged token carries the identity, a viewer');
  const after = (await s.call('GET', `/iam/v2/identities/${identityUid}`)).body;
  assert.ok(Date.parse(after.lastSeenTime) > Date.parse(before.lastSeenTime), 'the exchange records when it was seen');
  const viaGet = await exchange(await sign({ sub: 'repo:acme/app:ref:main' }), `identity=${identityUid}`, 'GET');
  assert.is(viaGet.status, 200);
});

test('an identity of static keys: a token its keys signed for its issuer, subject and audience, until they expire', async () => {
  // No issuer to ask: the keys are the identity's own (a JWKS document), as the reference's StaticKeys.
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const other = await generateKeyPair('ES256');
  const issuerKeys = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] });
  const staticKeys = { issuer: 'https://static.example', subject: 'robot', issuerKeys, audiences: ['conformance'] };
  const id = (await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'robot', staticKeys }))
    .body.uid;
  await s.call('POST', `/iam/v2/roleBindings/${s.bootstrap.organization}`, { identityUid: id, roleUid: viewerRole });
  const signed = (claims: Record<string, unknown>, key = privateKey) =>
    new SignJWT({ iss: staticKeys.issuer, sub: 'robot', aud: 'conformance', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key);
  const r = await exchange(await signed({}), `identity=${id}`);
  assert.is(r.status, 200, JSON.stringify(r.body));
  const auth = { authorization: `Bearer ${r.body.token}` };
  assert.is((await s.call('GET', '/registry/v2/repos', undefined, auth)).status, 200, 'the token works, a viewer');
  assert.type(r.body.refreshToken, 'string');
  for (const [what, token] of [
    ['another key', await signed({}, other.privateKey)],
    ['another subject', await signed({ sub: 'someone' })],
    ['another issuer', await signed({ iss: 'https://other.example' })],
    ['another audience', await signed({ aud: s.url })],
  ] as const)
    assert.is((await exchange(token, `identity=${id}`)).status, 403, what);
  // Keys past their expirationTime sign nothing.
  const expired = { ...staticKeys, expirationTime: '2020-01-01T00:00:00.000Z' };
  await s.call('PATCH', `/iam/v2/identities/${id}?updateMask=staticKeys`, { staticKeys: expired });
  assert.is((await exchange(await signed({}), `identity=${id}`)).status, 403, 'expired keys');
  // What refresh tokens were issued against changed: they end.
  assert.is((await refreshHttp(r.body.refreshToken)).status, 401, 'the static keys changed');
});

test('identities:lookupIdentity finds the identity for an issuer and subject (a custom :verb method)', async () => {
  const found = await s.call(
    'GET',
    `/iam/v2/identities:lookupIdentity?issuer=${encodeURIComponent(upstreamUrl)}&subject=${encodeURIComponent('repo:acme/app:ref:main')}`,
  );
  assert.equal(found.body, { uid: identityUid });
  assert.is(
    (await s.call('GET', `/iam/v2/identities:lookupIdentity?issuer=${encodeURIComponent(upstreamUrl)}&subject=nobody`))
      .status,
    404,
  );
  assert.is((await s.call('GET', '/iam/v2/identities:lookupIdentity?issuer=x')).status, 400, 'subject is required');
  assert.is(
    (await s.call('GET', '/iam/v2/identities:lookupIdentity?issuer=x&subject=y', undefined, { authorization: '' }))
      .status,
    401,
  );
});

test('subject patterns match whole subjects', async () => {
  const id = (
    await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, {
      name: 'any branch',
      claimMatch: { issuer: upstreamUrl, subjectPattern: 'repo:acme/app:ref:.*' },
    })
  ).body;
  assert.is((await exchange(await sign({ sub: 'repo:acme/app:ref:dev' }), `identity=${id.uid}`)).status, 200);
  assert.is((await exchange(await sign({ sub: 'xrepo:acme/app:ref:dev' }), `identity=${id.uid}`)).status, 403);
});

test('wrong subject, expired token, forged token, unknown identity and missing parameters are refused', async () => {
  const wrong = await exchange(await sign({ sub: 'repo:acme/other:ref:main' }), `identity=${identityUid}`);
  assert.is(wrong.status, 403, JSON.stringify(wrong.body));
  assert.is(wrong.body.code, 7);
  const expired = await exchange(
    await sign({ sub: 'repo:acme/app:ref:main', exp: Math.floor(Date.now() / 1000) - 60 }),
    `identity=${identityUid}`,
  );
  assert.is(expired.status, 401, JSON.stringify(expired.body));
  assert.match(expired.body.message, /expired/);
  const { privateKey } = await generateKeyPair('ES256');
  const forged = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'upstream-1' })
    .setIssuer(upstreamUrl)
    .setSubject('repo:acme/app:ref:main')
    .setAudience(s.url)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);
  assert.is((await exchange(forged, `identity=${identityUid}`)).status, 403, 'a forged token: the one refusal');
  const unknown = await exchange(
    await sign({ sub: 'repo:acme/app:ref:main' }),
    `identity=${s.bootstrap.organization}/0123456789abcdef`,
  );
  assert.is(unknown.status, 403, 'an unknown identity: the one refusal');
  assert.is((await exchange(await sign({ sub: 'x' }), '')).status, 400);
  assert.is(
    (await s.call('POST', `/sts/exchange?identity=${identityUid}`, undefined, { authorization: '' })).status,
    401,
  );
});

/**
 * SecurityTokenService as the reference's SDK calls it: a codec made from the facts of the reference's oidc protos
 * (test/facts/grpc-v1.json), not ours, and the upstream token as the bearer metadata.
 */
async function grpcExchange(
  rpc: 'Exchange' | 'ExchangeRefreshToken',
  request: object,
  bearer?: string,
): Promise<{ code: number; message?: string; value?: any; details?: any[] }> {
  const facts = JSON.parse(readFileSync('test/facts/grpc-v1.json', 'utf8'));
  const root = new protobuf.Root();
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  const oidc = root.define('chainguard.platform.oidc');
  const names = ['ExchangeRequest', 'ExchangeRefreshTokenRequest', 'RawToken', 'TokenPair'];
  for (const name of names) oidc.add(new protobuf.Type(name));
  for (const name of names)
    for (const f of facts.messages[`chainguard.platform.oidc.${name}`].fields)
      root
        .lookupType(`chainguard.platform.oidc.${name}`)
        .add(
          new protobuf.Field(
            f.name,
            f.number,
            f.kind === 'scalar' ? f.type : `.${f.type}`,
            f.label === 'repeated' ? 'repeated' : undefined,
          ),
        );
  root.resolveAll();
  const rpcFacts = facts.domains.oidc.services[0].rpcs.find((r: { name: string }) => r.name === rpc);
  const req = root.lookupType(rpcFacts.request);
  const res = root.lookupType(rpcFacts.response);
  const client = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (bearer) metadata.set('authorization', `Bearer ${bearer}`);
  try {
    return await new Promise((resolve) =>
      client.makeUnaryRequest(
        rpcFacts.grpcPath,
        (o: object) => Buffer.from(req.encode(req.fromObject(o)).finish()),
        (b: Buffer) => res.toObject(res.decode(b), { longs: String }),
        request,
        metadata,
        (e, value) => {
          if (!e) return resolve({ code: 0, value });
          const bin = e.metadata.get('grpc-status-details-bin')[0] as Buffer | undefined;
          resolve({ code: e.code, message: e.details, details: bin ? readStatusDetails(bin).details : [] });
        },
      ),
    );
  } finally {
    client.close();
  }
}

test("the SDK's exchange over gRPC (SecurityTokenService/Exchange) is the HTTP exchange: same token, same refusals", async () => {
  const upstreamToken = await sign({ sub: 'repo:acme/app:ref:main' });
  // As the SDK sends it: one audience, the unset fields as proto3 leaves them.
  const r = await grpcExchange('Exchange', { aud: [s.url], identity: identityUid, scope: '', cap: [] }, upstreamToken);
  assert.is(r.code, 0, JSON.stringify(r));
  assert.ok(Number(r.value.expiry.seconds) * 1000 - Date.now() <= 3600_000 + 5000, 'at most an hour');
  const repos = await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${r.value.token}` });
  assert.is(repos.status, 200, 'the token works on the API');

  // The refusals are HTTP's, as gRPC statuses with the same messages.
  const http = await exchange(await sign({ sub: 'repo:acme/other:ref:main' }), `identity=${identityUid}`);
  const wrong = await grpcExchange(
    'Exchange',
    { identity: identityUid },
    await sign({ sub: 'repo:acme/other:ref:main' }),
  );
  assert.equal([wrong.code, wrong.message], [grpc.status.PERMISSION_DENIED, http.body.message]);
  const foreign = await grpcExchange('Exchange', { identity: identityUid, aud: ['customer'] }, upstreamToken);
  assert.is(foreign.code, grpc.status.INVALID_ARGUMENT, 'only our own audiences');
  const capped = await grpcExchange('Exchange', { identity: identityUid, cap: ['CAP_REPO_LIST'] }, upstreamToken);
  assert.is(capped.code, grpc.status.INVALID_ARGUMENT, 'cap is refused, not ignored');
  assert.is(capped.details?.find((d) => d.fieldViolations)?.fieldViolations[0].field, 'cap');
  const noToken = await grpcExchange('Exchange', { identity: identityUid });
  assert.is(noToken.code, grpc.status.UNAUTHENTICATED);
  const notRefresh = await grpcExchange('ExchangeRefreshToken', { aud: [s.url] }, upstreamToken);
  assert.is(notRefresh.code, grpc.status.UNAUTHENTICATED, 'an upstream token is no refresh token');
  assert.match(r.value.refresh_token, /^cgrt_/, 'the exchange over gRPC issues a refresh token too');
});

const refreshHttp = (refreshToken: string, query = '') =>
  s.call('POST', `/sts/exchange_refresh_token${query}`, undefined, { authorization: `Bearer ${refreshToken}` });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

test('refresh tokens: issued by the exchange, rotated on use over HTTP and gRPC, a reused one ends its family', async () => {
  const first = await exchange(await sign({ sub: 'repo:acme/app:ref:main' }), `identity=${identityUid}`);
  assert.match(first.body.refreshToken, /^cgrt_[A-Za-z0-9_-]{43}$/);
  const overHttp = await refreshHttp(first.body.refreshToken);
  assert.is(overHttp.status, 200, JSON.stringify(overHttp.body));
  const { token, refreshToken } = overHttp.body;
  const repos = await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${token.token}` });
  assert.is(repos.status, 200, 'the refreshed token works on the API');
  assert.ok(Date.parse(token.expiry) - Date.now() <= 3600_000 + 5000, 'at most an hour');
  assert.is.not(refreshToken.token, first.body.refreshToken, 'rotated');
  const overGrpc = await grpcExchange('ExchangeRefreshToken', { aud: [], cap: [], scope: '' }, refreshToken.token);
  assert.is(overGrpc.code, 0, JSON.stringify(overGrpc));
  const third = overGrpc.value.refresh_token.token as string;
  assert.is(Number(overGrpc.value.refresh_token.expiry.seconds) * 1000, Date.parse(refreshToken.expiry), 'one end');
  const viaGrpc = await s.call('GET', '/registry/v2/repos', undefined, {
    authorization: `Bearer ${overGrpc.value.token.token}`,
  });
  assert.is(viaGrpc.status, 200);

  // Stored only as digests.
  const rows = await query(s, 'select * from refresh_tokens where identity_uid = ?', [identityUid]);
  const stored = JSON.stringify(rows);
  for (const t of [first.body.refreshToken, refreshToken.token, third]) {
    assert.not.ok(stored.includes(t), 'no token in the clear');
    assert.ok(rows.some((row) => row.uid === sha256(t)));
  }

  // The first token presented again: refused, and the family's live token (third) with it, on either transport.
  const reused = await refreshHttp(first.body.refreshToken);
  assert.is(reused.status, 401, JSON.stringify(reused.body));
  const live = await grpcExchange('ExchangeRefreshToken', {}, third);
  assert.is(live.code, grpc.status.UNAUTHENTICATED, 'the family is dead');
  assert.is(live.message, reused.body.message, 'one refusal, the same over gRPC');
  assert.is((await refreshHttp(third)).status, 401);
  // Another family of the same identity is untouched.
  const other = await exchange(await sign({ sub: 'repo:acme/app:ref:main' }), `identity=${identityUid}`);
  assert.is((await refreshHttp(other.body.refreshToken)).status, 200);
});

test('refresh tokens end with their identity, a change of its claimMatch, and the lifetime of their exchange', async () => {
  const org = s.bootstrap.organization;
  const claimMatch = { issuer: upstreamUrl, subject: 'repo:acme/refresh:ref:main' };
  const id = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'refresher', claimMatch })).body.uid;
  const issue = async () =>
    (await exchange(await sign({ sub: claimMatch.subject }), `identity=${id}`)).body.refreshToken as string;

  // A description changed: the claimMatch is the same, the token lives.
  const kept = await issue();
  await s.call('PATCH', `/iam/v2/identities/${id}?update_mask=description`, { description: 'renamed' });
  const afterRename = await refreshHttp(kept);
  assert.is(afterRename.status, 200, JSON.stringify(afterRename.body));

  const beforeChange = await issue();
  const patched = await s.call('PATCH', `/iam/v2/identities/${id}`, {
    claimMatch: { ...claimMatch, claims: { ref: 'main' } },
  });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  assert.is((await refreshHttp(beforeChange)).status, 401, 'the claimMatch changed');
  assert.is((await refreshHttp(afterRename.body.refreshToken.token)).status, 401);

  // The end of the exchange's lifetime (REFRESH_TOKEN_SECONDS), as the database says it.
  const expiring = (await exchange(await sign({ sub: claimMatch.subject, ref: 'main' }), `identity=${id}`)).body
    .refreshToken;
  await query(
    s,
    'update refresh_tokens set expire_time = ? where uid = ?',
    ['2000-01-01T00:00:00.000Z', sha256(expiring)],
    true,
  );
  assert.is((await refreshHttp(expiring)).status, 401, 'past its end');

  const beforeDelete = (await exchange(await sign({ sub: claimMatch.subject, ref: 'main' }), `identity=${id}`)).body
    .refreshToken;
  assert.is((await s.call('DELETE', `/iam/v2/identities/${id}`)).status, 200);
  const gone = await refreshHttp(beforeDelete);
  assert.is(gone.status, 401, 'the identity is gone');
  assert.is(
    (await query(s, 'select count(*) as n from refresh_tokens where identity_uid = ? and used_time is null', [id]))[0]
      .n,
    0,
    'dead families are removed',
  );
});

test('refresh: cap, scope and foreign audiences are refused before the token is spent; bad tokens are 401', async () => {
  const { refreshToken } = (await exchange(await sign({ sub: 'repo:acme/app:ref:main' }), `identity=${identityUid}`))
    .body;
  const capped = await refreshHttp(refreshToken, '?cap=CAP_REPO_LIST');
  assert.is(capped.status, 400);
  assert.is(capped.body.details.find((d: any) => d.fieldViolations)?.fieldViolations[0].field, 'cap');
  const grpcCapped = await grpcExchange('ExchangeRefreshToken', { cap: ['CAP_REPO_LIST'] }, refreshToken);
  assert.is(grpcCapped.code, grpc.status.INVALID_ARGUMENT);
  assert.is((await refreshHttp(refreshToken, '?aud=customer')).status, 400, 'only our own audiences');
  const ok = await refreshHttp(refreshToken, `?aud=${encodeURIComponent(s.url)}`);
  assert.is(ok.status, 200, 'not spent by the refusals');
  for (const bad of ['', 'Bearer', `Bearer ${s.token}`, 'Bearer cgrt_short', `Bearer ${'cgrt_'}${'a'.repeat(43)}`]) {
    const r = await s.call('POST', '/sts/exchange_refresh_token', undefined, { authorization: bad });
    assert.is(r.status, 401, bad);
  }
  assert.throws(
    () => readConfig({ REFRESH_TOKEN_SECONDS: 'a day' }),
    (e: Error) => e instanceof ConfigError && /^REFRESH_TOKEN_SECONDS must be/.test(e.message),
  );
});

test('REFRESH_TOKEN_SECONDS=0: the exchange issues no refresh token and refresh refuses', async () => {
  const off = await startTestServer(undefined, { REFRESH_TOKEN_SECONDS: '0' });
  try {
    const id = (
      await off.call('POST', `/iam/v2/identities/${off.bootstrap.organization}`, {
        name: 'ci',
        claimMatch: { issuer: upstreamUrl, subject: 'repo:acme/app:ref:main' },
      })
    ).body.uid;
    const r = await off.call('POST', `/sts/exchange?identity=${id}`, undefined, {
      authorization: `Bearer ${await sign({ sub: 'repo:acme/app:ref:main', aud: off.url })}`,
    });
    assert.is(r.status, 200, JSON.stringify(r.body));
    assert.is(r.body.refreshToken, undefined);
    assert.is((await query(off, 'select count(*) as n from refresh_tokens'))[0].n, 0);
  } finally {
    await off.stop();
  }
});

test('an issuer that is down gives UNAVAILABLE quickly instead of hanging', async () => {
  const dead = 'http://127.0.0.1:9';
  const id = (
    await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, {
      name: 'dead',
      claimMatch: { issuer: dead, subject: 'x' },
    })
  ).body;
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(dead)
    .setSubject('x')
    .setExpirationTime('5m')
    .sign((await generateKeyPair('ES256')).privateKey);
  const started = Date.now();
  const r = await exchange(token, `identity=${id.uid}`);
  assert.is(r.status, 503, JSON.stringify(r.body));
  assert.is(r.body.code, 14);
  assert.ok(Date.now() - started < 10_000);
  const plain = (
    await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, {
      name: 'plain',
      claimMatch: { issuer: 'http://issuer.example', subject: 'x' },
    })
  ).body;
  const insecure = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer('http://issuer.example')
    .setSubject('x')
    .setExpirationTime('5m')
    .sign((await generateKeyPair('ES256')).privateKey);
  const refused = await exchange(insecure, `identity=${plain.uid}`);
  assert.is(refused.status, 403, 'a plain http issuer elsewhere than loopback: refused, never fetched');
});

test('an issuer that trickles its answer is cut at the deadline; an issuer that is no URL is the one refusal', async () => {
  // A byte every 400 ms: never silent long enough for a socket timeout, so only a deadline ends it.
  const trickle = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const timer = setInterval(() => res.write(' '), 400);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => trickle.listen(0, '127.0.0.1', r));
  const slowIssuer = `http://127.0.0.1:${(trickle.address() as AddressInfo).port}`;
  try {
    const slow = await newIdentity('trickled', { issuer: slowIssuer, subject: 'x' });
    const started = Date.now();
    const r = await exchange(await sign({ sub: 'x', iss: slowIssuer }), `identity=${slow}`);
    assert.is(r.status, 503, JSON.stringify(r.body));
    assert.ok(Date.now() - started < 9000, `answered after ${Date.now() - started} ms, past the 5 s deadline`);
  } finally {
    trickle.closeAllConnections();
    await new Promise((r) => trickle.close(r));
  }
  for (const issuer of ['notaurl', 'https://[bad', 'https://a b']) {
    const odd = await newIdentity(`odd-${issuer.length}`, { issuer, subject: 'x' });
    const r = await exchange(await sign({ sub: 'x', iss: issuer }), `identity=${odd}`);
    assert.is(r.status, 403, `${issuer}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.message, /cannot assume this identity/);
  }
});

const newIdentity = async (name: string, claimMatch: Record<string, unknown>) => {
  const r = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name, claimMatch });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body.uid as string;
};

const workflow = 'acme/app/.github/workflows/release.yml@refs/heads/main';

test('every declared claim and claim pattern is checked, the audience is ours unless the identity names one, exp is required', async () => {
  const uid = await newIdentity('release', {
    issuer: upstreamUrl,
    subject: 'repo:acme/app:ref:refs/heads/main',
    claims: { job_workflow_ref: workflow, repository_owner: 'acme' },
    claimPatterns: { ref: 'refs/heads/(main|release)' },
  });
  const right = {
    sub: 'repo:acme/app:ref:refs/heads/main',
    job_workflow_ref: workflow,
    repository_owner: 'acme',
    ref: 'refs/heads/main',
  };
  const ok = await exchange(await sign(right), `identity=${uid}`);
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  for (const [what, claims] of [
    ['another workflow', { ...right, job_workflow_ref: 'evil/app/.github/workflows/x.yml@refs/heads/main' }],
    ['another owner', { ...right, repository_owner: 'evil' }],
    ['a claim left out', { sub: right.sub, job_workflow_ref: workflow, ref: right.ref }],
    ['a claim pattern not matched', { ...right, ref: 'refs/heads/feature' }],
    ['a claim of another type', { ...right, repository_owner: ['acme'] }],
    ['a foreign audience', { ...right, aud: 'https://other.example' }],
  ] as const) {
    const r = await exchange(await sign(claims), `identity=${uid}`);
    assert.is(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
  }
  const noExp = await exchange(await sign({ ...right, exp: null }), `identity=${uid}`);
  assert.is(noExp.status, 401, JSON.stringify(noExp.body));
  assert.match(noExp.body.message, /exp/);
  // An identity naming its own audience takes that one, and no longer ours.
  const own = await newIdentity('own audience', { issuer: upstreamUrl, subject: right.sub, audience: 'sts.acme' });
  assert.is((await exchange(await sign({ sub: right.sub, aud: 'sts.acme' }), `identity=${own}`)).status, 200);
  assert.is((await exchange(await sign({ sub: right.sub }), `identity=${own}`)).status, 403);
});

test('the exchange mints only our own audiences (TOKEN_AUDIENCE, the issuer URL), never a webhook audience', async () => {
  const token = () => sign({ sub: 'repo:acme/app:ref:main' });
  for (const aud of ['customer', 'https://hooks.example.com']) {
    const r = await exchange(await token(), `identity=${identityUid}&aud=${encodeURIComponent(aud)}`);
    assert.is(r.status, 400, JSON.stringify(r.body));
    assert.is(r.body.code, 3);
    assert.is(r.body.details.find((d: any) => d.fieldViolations)?.fieldViolations[0].field, 'aud');
  }
  const ours = await exchange(await token(), `identity=${identityUid}&aud=${encodeURIComponent(s.url)}`);
  assert.is(ours.status, 200, JSON.stringify(ours.body));
});

test('refusals are one answer: unknown or malformed identity, no claimMatch, another issuer, subject, audience or claim', async () => {
  const claimed = await newIdentity('claimed', {
    issuer: upstreamUrl,
    subject: 'repo:acme/app:ref:main',
    claims: { repository_owner: 'acme' },
  });
  const otherIssuer = await newIdentity('other issuer', { issuer: 'https://issuer.example', subject: 'x' });
  const good = { sub: 'repo:acme/app:ref:main', repository_owner: 'acme' };
  const bodies = [
    await exchange(await sign(good), `identity=${s.bootstrap.organization}/0123456789abcdef`),
    await exchange(await sign(good), 'identity=not-a-uid'),
    await exchange(await sign(good), `identity=${s.bootstrap.owner}`),
    await exchange(await sign(good), `identity=${otherIssuer}`),
    await exchange(await sign({ ...good, sub: 'repo:acme/other:ref:main' }), `identity=${claimed}`),
    await exchange(await sign({ ...good, aud: 'https://other.example' }), `identity=${claimed}`),
    await exchange(await sign({ ...good, repository_owner: 'evil' }), `identity=${claimed}`),
  ];
  assert.is((await exchange(await sign(good), `identity=${claimed}`)).status, 200, 'the right token passes');
  for (const r of bodies) {
    assert.is(r.status, 403);
    assert.equal(r.body, bodies[0].body);
  }
  assert.not.match(JSON.stringify(bodies[0].body), /issuer|subject|claimMatch|found|example/);
});

test('a pattern that can backtrack without bound is refused when written (v2 create and update, v1)', async () => {
  const org = s.bootstrap.organization;
  for (const claimMatch of [
    { issuer: upstreamUrl, subjectPattern: '(a+)+b' },
    { issuerPattern: '(x|x)*y', subject: 's' },
    { issuer: upstreamUrl, subject: 's', claimPatterns: { ref: '(a)\\1' } },
    { issuer: upstreamUrl, subject: 's', audiencePattern: '(?=a).*' },
    { issuer: upstreamUrl, subjectPattern: 'a'.repeat(257) },
    // A fixed count of an optional part: 24 optional parts (found by an attack on the first version of the check).
    { issuerPattern: '(?:\\w?){24}\\w{24}!', subject: 's' },
    { issuer: upstreamUrl, subject: 's', claimPatterns: { ref: '(?:a?){30}a{30}' } },
  ]) {
    const r = await s.call('POST', `/iam/v2/identities/${org}`, { name: 'redos', claimMatch });
    assert.is(r.status, 400, JSON.stringify(claimMatch));
    const field = r.body.details.find((d: any) => d.fieldViolations).fieldViolations[0].field;
    assert.match(field, /^claimMatch\.(subjectPattern|issuerPattern|claimPatterns\.ref|audiencePattern)$/);
  }
  const patch = await s.call('PATCH', `/iam/v2/identities/${identityUid}`, {
    claimMatch: { issuer: upstreamUrl, subjectPattern: '(a+)+b' },
  });
  assert.is(patch.status, 400, JSON.stringify(patch.body));
  const v1 = await s.call('POST', `/iam/v1/identities/${org}`, {
    name: 'redos-v1',
    claimMatch: { issuer: upstreamUrl, subjectPattern: '(a+)+b' },
  });
  assert.is(v1.status, 400, JSON.stringify(v1.body));
  assert.match(v1.body.message ?? JSON.stringify(v1.body), /subjectPattern/);
  const safe = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'safe',
    claimMatch: { issuer: upstreamUrl, subjectPattern: 'repo:acme/.*:ref:refs/(heads|tags)/.*' },
  });
  assert.is(safe.status, 200, JSON.stringify(safe.body));
});

test('an unsafe pattern already stored is never run: the exchange refuses at once', async () => {
  const uid = await newIdentity('stored', { issuerPattern: 'placeholder', subject: 'x' });
  await query(
    s,
    'update identities set claim_match = ? where uid = ?',
    [JSON.stringify({ issuerPattern: '(a+)+b', subject: 'x' }), uid],
    true,
  );
  // 40 characters: (a+)+b would take about 2^40 steps over them.
  const iss = 'a'.repeat(40);
  const started = Date.now();
  const r = await exchange(await sign({ sub: 'x', iss }), `identity=${uid}`);
  assert.is(r.status, 403, JSON.stringify(r.body));
  assert.ok(Date.now() - started < 10_000, 'answered, not hung');
  const long = await exchange(await sign({ sub: 'x', iss: `https://${'a'.repeat(600)}` }), `identity=${uid}`);
  assert.is(long.status, 401, 'an issuer longer than any pattern is matched against is refused unread');
});

test('compiled patterns are kept in a bounded cache', () => {
  for (let i = 0; i < maxCompiledPatterns + 200; i++) matchesPattern(`repo:acme/app${i}:.*`, 'repo:acme/app1:x');
  assert.is(compiledPatternCount(), maxCompiledPatterns);
});

/** A plain HTTP server on loopback answering every request with handle; counts requests. */
async function issuerServer(handle: (url: string, res: import('node:http').ServerResponse, base: string) => void) {
  let requests = 0;
  let base = '';
  const server = createServer((req, res) => {
    requests++;
    handle(req.url ?? '', res, base);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, requests: () => requests, close: () => new Promise((r) => server.close(r)) };
}

/** A token for an identity accepting exactly iss, signed by a key no one publishes: only the fetch matters. */
async function tokenOf(iss: string) {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'k' })
    .setIssuer(iss)
    .setSubject('x')
    .setAudience(s.url)
    .setExpirationTime('5m')
    .sign((await generateKeyPair('ES256')).privateKey);
}

test('issuers on loopback, metadata, private and IPv4-carrying IPv6 addresses are refused without a request', async () => {
  const strict = await startTestServer(undefined, { OUTBOUND_ALLOW_LOOPBACK: 'off' });
  // A listener on loopback that counts connections: none may reach it.
  const listener = await countConnections();
  const { port } = listener;
  try {
    for (const iss of [
      `http://127.0.0.1:${port}`,
      `https://127.0.0.1:${port}`,
      `https://localhost:${port}`,
      'https://169.254.169.254',
      'https://10.0.0.1',
      'https://192.168.1.1',
      `https://[64:ff9b::7f00:1]:${port}`,
      `https://[2002:7f00:1::]:${port}`,
      `https://[::127.0.0.1]:${port}`,
      `https://[::ffff:127.0.0.1]:${port}`,
    ]) {
      const uid = (
        await strict.call('POST', `/iam/v2/identities/${strict.bootstrap.organization}`, {
          name: 'ssrf',
          claimMatch: { issuer: iss, subject: 'x' },
        })
      ).body.uid;
      const r = await strict.call('POST', `/sts/exchange?identity=${uid}`, undefined, {
        authorization: `Bearer ${await tokenOf(iss)}`,
      });
      assert.is(r.status, 403, `${iss}: ${JSON.stringify(r.body)}`);
    }
    assert.is(listener.connections(), 0, 'no connection reached the loopback listener');
  } finally {
    await strict.stop();
    await listener.close();
  }
});

test('an issuer that redirects is not followed, an answer is bounded, an issuer error never echoes its body', async () => {
  const target = await issuerServer((_, res) => res.end('{}'));
  const redirecting = await issuerServer((_, res) => {
    res.statusCode = 302;
    res.setHeader('location', `${target.base}/.well-known/openid-configuration`);
    res.end('SECRET-REDIRECT-BODY');
  });
  const failing = await issuerServer((_, res) => {
    res.statusCode = 500;
    res.end('SECRET-500-BODY');
  });
  const notJson = await issuerServer((_, res) => res.end('SECRET-NOT-JSON-BODY'));
  const huge = await issuerServer((_, res) => res.end(`{"SECRET":"${'x'.repeat(maxIssuerDocumentBytes)}"}`));
  const badKeys = await issuerServer((url, res, base) =>
    res.end(url.includes('openid') ? JSON.stringify({ jwks_uri: `${base}/keys` }) : 'SECRET-KEYS-BODY'),
  );
  try {
    for (const [issuer, said] of [
      [redirecting, /302/],
      [failing, /500/],
      [notJson, /JSON/],
      [badKeys, /JSON/],
      [huge, new RegExp(`larger than ${maxIssuerDocumentBytes} bytes`)],
    ] as const) {
      const uid = await newIdentity('upstream errors', { issuer: issuer.base, subject: 'x' });
      const r = await exchange(await tokenOf(issuer.base), `identity=${uid}`);
      assert.is(r.status, 503, JSON.stringify(r.body));
      assert.match(r.body.message, said);
      assert.not.match(JSON.stringify(r.body), /SECRET/);
    }
    assert.is(target.requests(), 0, 'the redirect was not followed');
  } finally {
    for (const server of [target, redirecting, failing, notJson, badKeys, huge]) await server.close();
  }
});

test('the key sets of issuers are kept in a bounded cache', async () => {
  // One listener plays many issuers (/i0, /i1, ...), each with its discovery document and key set.
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256', use: 'sig' };
  const many = await issuerServer((url, res, base) => {
    const issuer = `${base}${url.split('/.well-known')[0]}`;
    res.end(JSON.stringify(url.endsWith('/keys') ? { keys: [jwk] } : { issuer, jwks_uri: `${issuer}/keys` }));
  });
  // The exchange over an identity table of one identity that accepts every one of those issuers.
  const identity = { claimMatch: { issuerPattern: 'http://127\\.0\\.0\\.1:[0-9]+/i[0-9]+', subject: 'x' } };
  const resources = { tableOf: () => ({ get: async () => identity }), write: async () => undefined };
  const ours = { issuer: 'http://ours', audience: 'http://ours', mint: async () => ({ token: 't', expiry: '' }) };
  const sts = new TokenExchange(
    resources as unknown as Resources,
    () => ours as unknown as TokenIssuer,
    { allowLoopback: true, allowPrivate: false },
    new RefreshTokens(resources as unknown as Resources, 0),
  );
  try {
    for (let i = 0; i < maxKeySets + 20; i++) {
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .setIssuer(`${many.base}/i${i}`)
        .setSubject('x')
        .setAudience('http://ours')
        .setExpirationTime('5m')
        .sign(privateKey);
      assert.equal(await sts.exchange(token, 'a'.repeat(40), undefined), { token: 't', expiry: '' });
    }
    assert.is(sts.keySetCount, maxKeySets);
  } finally {
    await many.close();
  }
});

test.run();
