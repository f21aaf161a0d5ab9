// The token exchange against a real OIDC issuer started on loopback by the test.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let upstream: Server;
let upstreamUrl: string;
let sign: (claims: { sub: string; aud?: string; exp?: number }) => Promise<string>;
let identityUid: string;
let viewerRole: string;

test.before(async () => {
  s = await startTestServer();
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'upstream-1', alg: 'ES256', use: 'sig' };
  upstream = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration')
      res.end(JSON.stringify({ issuer: upstreamUrl, jwks_uri: `${upstreamUrl}/keys` }));
    else if (req.url === '/keys') res.end(JSON.stringify({ keys: [jwk] }));
    else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  sign = ({ sub, aud = s.url, exp }) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'upstream-1' })
      .setIssuer(upstreamUrl)
      .setSubject(sub)
      .setAudience(aud)
      .setIssuedAt(now - 120)
      .setExpirationTime(exp ?? now + 300)
      .sign(privateKey);
  };
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
  await new Promise((r) => upstream.close(r));
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
  assert.is((await exchange(forged, `identity=${identityUid}`)).status, 401);
  const unknown = await exchange(
    await sign({ sub: 'repo:acme/app:ref:main' }),
    `identity=${s.bootstrap.organization}/0123456789abcdef`,
  );
  assert.is(unknown.status, 404);
  assert.is((await exchange(await sign({ sub: 'x' }), '')).status, 400);
  assert.is(
    (await s.call('POST', `/sts/exchange?identity=${identityUid}`, undefined, { authorization: '' })).status,
    401,
  );
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
  assert.is(refused.status, 401);
  assert.match(refused.body.message, /https/);
});

test.run();
