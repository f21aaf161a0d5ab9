// Organizations found by email (groups:checkEligibility, :lookupGroup, :requestGroupAccess) and
// identities:updateIdentityMetadata, over HTTP and gRPC, with emails recorded by real token exchanges from two
// real OIDC issuers on loopback: one trusted (TRUSTED_EMAIL_ISSUERS), one not.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { query } from './support/db.js';
import { grpcClient, type GrpcTestClient } from './support/grpc-client.js';
import { runScript } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

interface Issuer {
  url: string;
  server: Server;
  key: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
}

let s: TestServer;
let grpc: GrpcTestClient;
let trusted: Issuer;
let untrusted: Issuer;
let org: string;

async function startIssuer(): Promise<Issuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const issuer = { url: '', key: privateKey } as Issuer;
  issuer.server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration')
      res.end(JSON.stringify({ issuer: issuer.url, jwks_uri: `${issuer.url}/keys` }));
    else res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => issuer.server.listen(0, '127.0.0.1', r));
  issuer.url = `http://127.0.0.1:${(issuer.server.address() as AddressInfo).port}`;
  return issuer;
}

/** A token of ours for a new identity, got by exchanging an upstream token that carries these email claims. */
async function userWith(issuer: Issuer, email: string, verified = true, name = 'jane q doe'): Promise<string> {
  const subject = `user-${Math.random().toString(16).slice(2)}`;
  const made = await s.call('POST', `/iam/v2/identities/${org}`, { name, claimMatch: { issuer: issuer.url, subject } });
  assert.is(made.status, 200, JSON.stringify(made.body));
  return exchange(issuer, made.body.uid, subject, { email, email_verified: verified });
}

/** Exchanges an upstream token of the issuer, with these claims, for a token of ours for the identity. */
async function exchange(issuer: Issuer, identity: string, subject: string, claims: object): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const upstream = await new SignJWT({ ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(issuer.url)
    .setSubject(subject)
    .setAudience(s.url)
    .setIssuedAt(now - 60)
    .setExpirationTime(now + 300)
    .sign(issuer.key);
  const r = await s.call('POST', `/sts/exchange?identity=${identity}`, undefined, {
    authorization: `Bearer ${upstream}`,
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body.token;
}

const as = (token: string) => ({ authorization: `Bearer ${token}` });

async function verify(uid: string, ...flags: string[]) {
  return runScript('scripts/verify-group.ts', [uid, ...flags], s.env);
}

test.before(async () => {
  trusted = await startIssuer();
  untrusted = await startIssuer();
  s = await startTestServer(undefined, {
    TRUSTED_EMAIL_ISSUERS: trusted.url,
    BLOCKED_EMAIL_DOMAINS: 'freemail.test',
  });
  grpc = grpcClient(s.url, s.token);
  org = await createOrg(s, 'example.com');
});
test.after(async () => {
  grpc.close();
  await s.stop();
  for (const i of [trusted, untrusted]) await new Promise((r) => i.server.close(r));
});

test('the exchange keeps the upstream email: verified as email, else as emailUnverified', async () => {
  await userWith(trusted, 'Ann@Example.com');
  await userWith(trusted, 'bob@example.com', false);
  const ids = (await s.call('GET', `/iam/v2/identities?uidp.childrenOf=${org}`)).body.identities;
  const emails = ids.map((i: { email?: string; emailUnverified?: string }) => [i.email, i.emailUnverified]);
  assert.ok(
    emails.some(([e]: string[]) => e === 'Ann@Example.com'),
    JSON.stringify(emails),
  );
  assert.ok(
    emails.some(([e, u]: string[]) => e === undefined && u === 'bob@example.com'),
    JSON.stringify(emails),
  );
  for (const i of ids) {
    assert.is(i.emailIssuer, undefined, 'the issuer it came from is never shown');
    assert.is(i.metadata, undefined);
  }
});

test('verified needs CAP_INTERNAL over the API, even for the organization owner', async () => {
  const created = await s.call('POST', '/iam/v2/groups', { name: 'squat.example', verified: true });
  assert.is(created.status, 403, JSON.stringify(created.body));
  assert.match(created.body.message, 'changing verified needs CAP_INTERNAL');
  const patched = await s.call('PATCH', `/iam/v2/groups/${org}`, { verified: true });
  assert.is(patched.status, 403, JSON.stringify(patched.body));
  const plain = await s.call('PATCH', `/iam/v2/groups/${org}`, { description: 'ours', verified: false });
  assert.is(plain.status, 200, 'false is what it is already: no capability needed');
  const v1 = await s.call('POST', '/iam/v1/groups', { name: 'squat2.example', verified: true });
  assert.is(v1.status, 403, `v1 too: ${JSON.stringify(v1.body)}`);
  const { code } = await grpc.call('iam.v2.GroupsService', 'UpdateGroup', {
    group: { uid: org, name: 'example.com', verified: true },
    update_mask: { paths: ['verified'] },
  });
  assert.is(code, 7, 'gRPC too');
  assert.not.ok((await s.call('GET', `/iam/v2/groups/${org}`)).body.verified, 'still not verified');
});

test('nobody finds an organization until the operator verifies it', async () => {
  const ann = await userWith(trusted, 'ann@example.com');
  assert.equal((await s.call('GET', '/iam/v2/groups:checkEligibility', undefined, as(ann))).body, { eligible: true });
  const before = await s.call('GET', '/iam/v2/groups:lookupGroup', undefined, as(ann));
  assert.is(before.status, 404, JSON.stringify(before.body));
  const r = await verify(org);
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, `${org} is now verified`);
  const found = await s.call('GET', '/iam/v2/groups:lookupGroup', undefined, as(ann));
  assert.is(found.status, 200, JSON.stringify(found.body));
  assert.is(found.body.group.uid, org);
  assert.is(found.body.group.name, 'example.com');
  assert.is(found.body.group.verified, true);
  assert.type(found.body.group.createTime, 'string');
  const renamed = await s.call('PATCH', `/iam/v2/groups/${org}`, { name: 'bigcorp.com' });
  assert.is(renamed.status, 403, 'a verified organization keeps the name it was verified for');
  assert.match(renamed.body.message, 'changing name while verified is set needs CAP_INTERNAL');
  const described = await s.call('PATCH', `/iam/v2/groups/${org}`, { description: 'still ours' });
  assert.is(described.status, 200, "its other fields are its owner's");
  for (const [method, path, body] of [
    ['PATCH', `/iam/v2/groups/${org}`, { verified: false }],
    ['PATCH', `/iam/v2/groups/${org}?updateMask=verified`, {}],
    ['PUT', `/iam/v1/groups/${org}`, { name: 'example.com', description: 'a PUT that leaves verified out' }],
  ] as const) {
    const r = await s.call(method, path, body);
    assert.is(
      r.status,
      403,
      `${method} ${path}: taking the mark away needs CAP_INTERNAL too: ${JSON.stringify(r.body)}`,
    );
  }
  assert.is((await s.call('GET', `/iam/v2/groups/${org}`)).body.verified, true);
  const overGrpc = await grpc.call('iam.v2.GroupsService', 'LookupGroup', {}, ann);
  assert.is(overGrpc.code, 0, overGrpc.message);
  assert.is(overGrpc.value.group.uid, org);
  assert.is(overGrpc.value.group.verified, true);
});

test('verify-group refuses what cannot be verified, and says why', async () => {
  const folder = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'team.example.com' })).body.uid;
  const notDomain = await createOrg(s, 'acme corp');
  const twin = await createOrg(s, 'example.com');
  for (const [uid, why] of [
    [folder, 'not the uid of an organization'],
    [notDomain, 'is not a domain'],
    [twin, `organization ${org} is verified with the name "example.com" already`],
    ['f'.repeat(40), 'no organization'],
  ]) {
    const r = await verify(uid);
    assert.is(r.status, 1, r.stdout);
    assert.match(r.stderr, why);
    assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});

test('every way of not qualifying is the same NOT_FOUND, and not eligible', async () => {
  const callers = {
    'an untrusted issuer': await userWith(untrusted, 'ann@example.com'),
    'an unverified email': await userWith(trusted, 'ann@example.com', false),
    'a blocked domain': await userWith(trusted, 'ann@freemail.test'),
    'no organization of the domain': await userWith(trusted, 'ann@elsewhere.example'),
    'no email at all': await s.mint(s.bootstrap.owner),
  };
  const answers = new Set<string>();
  for (const [why, token] of Object.entries(callers)) {
    const lookup = await s.call('GET', '/iam/v2/groups:lookupGroup', undefined, as(token));
    assert.is(lookup.status, 404, why);
    answers.add(JSON.stringify(lookup.body));
    const ask = await s.call('POST', `/iam/v2/groups/${org}:requestGroupAccess`, {}, as(token));
    assert.is(ask.status, 404, why);
    answers.add(JSON.stringify(ask.body));
    const eligible = (await s.call('GET', '/iam/v2/groups:checkEligibility', undefined, as(token))).body.eligible;
    assert.is(eligible, why === 'no organization of the domain', why);
  }
  assert.is(answers.size, 1, [...answers].join('\n'));
  const forged = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'forger',
    email: 'ceo@example.com',
    emailIssuer: trusted.url,
    claimMatch: { issuer: untrusted.url, subject: 'forger' },
  });
  assert.is(forged.status, 400, 'the issuer of an email is set by the exchange alone');
  assert.match(forged.body.message, 'emailIssuer');
  assert.is((await s.call('GET', '/iam/v2/groups:lookupGroup', undefined, { authorization: '' })).status, 401);
});

test('a login without a verified email takes away the email an earlier login left', async () => {
  const subject = 'shared-subject';
  const made = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'shared',
    claimMatch: { issuer: trusted.url, subject },
  });
  const first = await exchange(trusted, made.body.uid, subject, { email: 'erin@example.com', email_verified: true });
  assert.is((await s.call('GET', '/iam/v2/groups:lookupGroup', undefined, as(first))).status, 200);
  const second = await exchange(trusted, made.body.uid, subject, {});
  assert.is((await s.call('GET', '/iam/v2/groups:lookupGroup', undefined, as(second))).status, 404);
  assert.equal((await s.call('GET', '/iam/v2/groups:checkEligibility', undefined, as(first))).body, {
    eligible: false,
  });
  assert.is((await s.call('GET', `/iam/v2/identities/${made.body.uid}`)).body.email, undefined);
});

test('requestGroupAccess: recorded once, announced to the organization, a repeat is 429 with Retry-After', async () => {
  const carl = await userWith(trusted, 'carl@example.com');
  const other = await createOrg(s, 'other.example');
  const wrong = await s.call('POST', `/iam/v2/groups/${other}:requestGroupAccess`, {}, as(carl));
  assert.is(wrong.status, 404, 'only the organization of the domain');
  const first = await s.call('POST', `/iam/v2/groups/${org}:requestGroupAccess`, {}, as(carl));
  assert.is(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.body, {});
  const again = await s.call('POST', `/iam/v2/groups/${org}:requestGroupAccess`, {}, as(carl));
  assert.is(again.status, 429, JSON.stringify(again.body));
  assert.is(again.body.details[0].reason, 'RESOURCE_EXHAUSTED');
  const retry = Number(again.headers.get('retry-after'));
  assert.ok(retry > 86_000 && retry <= 86_400, String(retry));
  const overGrpc = await grpc.call('iam.v2.GroupsService', 'RequestGroupAccess', { group_uid: org }, carl);
  assert.is(overGrpc.code, 8, 'RESOURCE_EXHAUSTED over gRPC too');
  const carlAgain = await userWith(trusted, 'Carl@Example.com');
  const sameEmail = await s.call('POST', `/iam/v2/groups/${org}:requestGroupAccess`, {}, as(carlAgain));
  assert.is(sameEmail.status, 429, 'the same email from another identity is a repeat');
  const rows = await query(s, 'select email from group_access_requests where parent_uid = ?', [org]);
  assert.equal(rows, [{ email: 'carl@example.com' }]);
  const events = await query(s, 'select group_uid, body from event_outbox where type = ?', [
    'dev.chainguard.api.iam.group.access_requested.v1',
  ]);
  assert.is(events.length, 1);
  assert.is(events[0].group_uid, org, 'the organization subscriptions receive it');
  assert.match(String(events[0].body), 'carl@example.com');
  const body = await s.call('POST', `/iam/v2/groups/${org}:requestGroupAccess`, { note: 'x' }, as(carl));
  assert.is(body.status, 400, 'the body is empty');
});

test('updateIdentityMetadata changes the caller alone, by mask or by the fields given', async () => {
  const dora = await userWith(trusted, 'dora@example.com', true, 'dora van der berg');
  const r = await s.call(
    'PATCH',
    '/iam/v2/identities:updateIdentityMetadata',
    { identityMetadata: { company: 'Example', jobTitle: 'SRE', updatesOptIn: true, hubspotUtk: 'utk-1' } },
    as(dora),
  );
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(r.body.name, 'dora van der berg');
  assert.is(r.body.givenName, 'dora');
  assert.is(r.body.familyName, 'van der berg');
  assert.is(r.body.company, 'Example');
  assert.is(r.body.jobTitle, 'SRE');
  assert.is(r.body.updatesOptIn, true);
  assert.is(r.body.hubspotUtk, 'utk-1');
  const masked = await s.call(
    'PATCH',
    '/iam/v2/identities:updateIdentityMetadata',
    { identityMetadata: { product: 'images', jobTitle: 'ignored' }, updateMask: 'product,utm_source' },
    as(dora),
  );
  assert.is(masked.status, 200, JSON.stringify(masked.body));
  assert.is(masked.body.product, 'images');
  assert.is(masked.body.jobTitle, 'SRE', 'not in the mask: kept');
  assert.is(masked.body.hubspotUtk, '', 'never stored');
  const overGrpc = await grpc.call(
    'iam.v2.IdentitiesService',
    'UpdateIdentityMetadata',
    { identity_metadata: { self_serve: true }, update_mask: { paths: ['self_serve'] } },
    dora,
  );
  assert.is(overGrpc.code, 0, overGrpc.message);
  assert.is(overGrpc.value.self_serve, true);
  assert.is(overGrpc.value.product, 'images');
  const identity = (await s.call('GET', `/iam/v2/identities?uidp.childrenOf=${org}&name=dora%20van%20der%20berg`)).body
    .identities[0];
  assert.is(identity.company, 'Example', "the company is the identity's");
  assert.is(identity.metadata, undefined, 'the rest is never shown with the identity');
  for (const [mask, why] of [
    ['uid', 'output only'],
    ['nonsense', 'no such field'],
  ]) {
    const bad = await s.call(
      'PATCH',
      '/iam/v2/identities:updateIdentityMetadata',
      { identityMetadata: {}, updateMask: mask },
      as(dora),
    );
    assert.is(bad.status, 400);
    assert.match(bad.body.message, `Invalid argument: update_mask: ${mask}: `);
    assert.match(bad.body.message, why);
  }
  const missing = await s.call('PATCH', '/iam/v2/identities:updateIdentityMetadata', {}, as(dora));
  assert.is(missing.status, 400, 'identityMetadata is required');
  const events = await query(s, 'select group_uid from event_outbox where type = ?', [
    'dev.chainguard.api.iam.identity.metadata.updated.v1',
  ]);
  assert.is(events.length, 3);
  assert.ok(
    events.every((e) => e.group_uid === null),
    'internal: no subscription receives it',
  );
});

test('an invite made for an email binds only an identity with that verified email from a trusted issuer', async () => {
  const viewer = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const made = await s.call('POST', `/iam/v2/groupInvites/${org}`, {
    roleUid: viewer,
    ttl: '3600s',
    singleUse: true,
    email: 'Invitee@EXAMPLE.com',
  });
  assert.is(made.status, 200, JSON.stringify(made.body));
  const accept = (token: string) => s.call('POST', '/iam/v2/groupInvites:accept', { code: made.body.code }, as(token));
  const invalidations = async () =>
    Number(/^grants_cache_invalidations_total (\d+)$/m.exec((await s.call('GET', '/metrics')).body)![1]);
  const before = await invalidations();
  const refusals = [
    ['no verified email', await userWith(trusted, 'Invitee@example.com', false)],
    ['another address', await userWith(trusted, 'someone@example.com')],
    ['another local part case', await userWith(trusted, 'invitee@example.com')],
    ['the address from an issuer not trusted', await userWith(untrusted, 'Invitee@example.com')],
  ] as const;
  assert.is(await invalidations(), before, 'new identities and their token exchanges leave the grants caches alone');
  for (const [what, token] of refusals) {
    const r = await accept(token);
    assert.is(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.code, 7, what);
    assert.not.match(JSON.stringify(r.body), /invitee/i, `${what}: the invited address is not told`);
  }
  // Through v1's register too, and the refusals did not use up the single-use invite.
  const stranger = await userWith(trusted, 'someone.else@example.com');
  assert.is((await s.call('POST', '/auth/v1/register', { code: made.body.code }, as(stranger))).status, 403);
  const accepted = await accept(await userWith(trusted, 'Invitee@example.COM'));
  assert.is(accepted.status, 200, JSON.stringify(accepted.body));
  assert.is(accepted.body.group, org);
  assert.is(await invalidations(), before + 1, 'the binding it made empties them');
});

test.run();
