// The SCIM token calls of identity providers, over HTTP and gRPC, against a real server: generated once, shown
// once and stored as a digest, regenerated with an overlap, revoked, switched on and off, every change guarded by
// the etag of IdentityProvider.scim.
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { grpcClient, type GrpcTestClient } from './support/grpc-client.js';
import { query } from './support/db.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let c: GrpcTestClient;
let viewer: string;
let owner: string;

test.before(async () => {
  s = await startTestServer();
  c = grpcClient(s.url, s.token);
  const roles = (await s.call('GET', '/iam/v2/roles?page_size=200')).body.roles;
  viewer = roles.find((r: { name: string }) => r.name === 'viewer').uid;
  owner = roles.find((r: { name: string }) => r.name === 'owner').uid;
});
test.after(async () => {
  c.close();
  await s.stop();
});

const newProvider = async (name: string) =>
  (
    await s.call('POST', `/iam/v2/identityProviders/${s.bootstrap.organization}`, {
      name,
      defaultRole: viewer,
      oidc: { issuer: 'https://idp.example', clientId: 'platform', clientSecret: 's3cret' },
    })
  ).body;
const verb = (uid: string, name: string, body: object = {}) =>
  s.call('POST', `/iam/v2/identityProviders/${uid}:${name}`, body);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const etagOf = async (uid: string) => (await s.call('GET', `/iam/v2/identityProviders/${uid}`)).body.scim.etag;

test('generate: shown once, stored as its SHA-256; a second generate is FAILED_PRECONDITION', async () => {
  const idp = await newProvider('generate');
  assert.equal(
    { enabled: idp.scim.enabled, state: idp.scim.credentialState },
    { enabled: false, state: 'CREDENTIAL_STATE_NOT_ISSUED' },
  );
  assert.type(idp.scim.etag, 'string');
  const r = await verb(idp.uid, 'generateScimToken');
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.match(r.body.token, /^cgscim_[0-9a-f]{64}$/);
  assert.is(r.body.identityProviderUid, idp.uid);
  const year = Date.parse(r.body.expireTime) - Date.now();
  assert.ok(year > 364 * 86400_000 && year <= 365 * 86400_000 + 5000, 'one year by default');
  assert.is.not(r.body.etag, idp.scim.etag, 'a new etag');
  const got = (await s.call('GET', `/iam/v2/identityProviders/${idp.uid}`)).body;
  assert.equal(got.scim.credentialState, 'CREDENTIAL_STATE_LIVE');
  assert.is(got.scim.etag, r.body.etag);
  assert.not.ok(JSON.stringify(got).includes(sha256(r.body.token)), 'the digest is never shown');
  const stored = JSON.stringify(await query(s, 'select * from identity_providers where uid = ?', [idp.uid]));
  assert.not.ok(stored.includes(r.body.token), 'no token in the clear');
  assert.ok(stored.includes(sha256(r.body.token)), 'its SHA-256 is kept');
  const events = await query(s, 'select body from event_outbox where subject = ? and type like ?', [
    idp.uid,
    '%scim_token.generated%',
  ]);
  assert.is(events.length, 1);
  assert.not.ok(String(events[0].body).includes(r.body.token), 'events never carry the token');

  const again = await verb(idp.uid, 'generateScimToken');
  assert.is(again.status, 400);
  assert.is(again.body.details.find((d: any) => d.violations)?.violations[0].type, 'SCIM_TOKEN_EXISTS');
  const both = await verb(idp.uid, 'generateScimToken', { expireTime: '2099-01-01T00:00:00Z', neverExpires: true });
  assert.is(both.status, 400, 'expire_time and never_expires exclude each other');
  const far = await newProvider('far');
  assert.is(
    (await verb(far.uid, 'generateScimToken', { expireTime: '2099-01-01T00:00:00Z' })).status,
    400,
    'two years',
  );
  const never = await verb(far.uid, 'generateScimToken', { neverExpires: true });
  assert.is(never.status, 200);
  assert.is(never.body.expireTime, undefined, 'a token that never expires has no expire_time');
});

test('regenerate: needs the current etag, overlaps the previous token, NOT_FOUND when none was issued', async () => {
  const idp = await newProvider('regenerate');
  const none = await verb(idp.uid, 'regenerateScimToken', { etag: idp.scim.etag });
  assert.is(none.status, 404, 'no token was ever issued');
  const first = await verb(idp.uid, 'generateScimToken');
  const stale = await verb(idp.uid, 'regenerateScimToken', { etag: idp.scim.etag });
  assert.is(stale.status, 409, JSON.stringify(stale.body));
  assert.is(stale.body.code, 10, 'ABORTED');
  assert.is((await verb(idp.uid, 'regenerateScimToken', {})).status, 400, 'etag is required');
  const r = await verb(idp.uid, 'regenerateScimToken', { etag: first.body.etag, overlap: '600s' });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is.not(r.body.token, first.body.token);
  assert.is(r.body.requestedOverlap, '600s');
  const overlapEnd = Date.parse(r.body.previousTokenExpireTime) - Date.now();
  assert.ok(overlapEnd > 590_000 && overlapEnd <= 600_000, 'the previous token works for the overlap');
  const got = (await s.call('GET', `/iam/v2/identityProviders/${idp.uid}`)).body.scim;
  assert.is(got.credentialState, 'CREDENTIAL_STATE_ROTATING');
  assert.is(got.previousTokenExpireTime, r.body.previousTokenExpireTime);
  const capped = await verb(idp.uid, 'regenerateScimToken', { etag: r.body.etag, overlap: '999999s' });
  assert.is(capped.body.requestedOverlap, '86400s', 'at most 24 h');
  const cutover = await verb(idp.uid, 'regenerateScimToken', { etag: capped.body.etag, overlap: '0s' });
  assert.is(cutover.body.previousTokenExpireTime, undefined, 'zero: no overlap');
  assert.is(
    (await s.call('GET', `/iam/v2/identityProviders/${idp.uid}`)).body.scim.credentialState,
    'CREDENTIAL_STATE_LIVE',
  );
  assert.is((await verb(idp.uid, 'regenerateScimToken', { etag: cutover.body.etag, overlap: 'soon' })).status, 400);
});

test('revoke needs no etag and leaves the switch; setScimEnabled needs the etag and two owners', async () => {
  const idp = await newProvider('switch');
  const generated = await verb(idp.uid, 'generateScimToken');
  const revoked = await verb(idp.uid, 'revokeScimToken');
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  assert.is(revoked.body.enabled, false);
  assert.type(revoked.body.revokeTime, 'string');
  const got = (await s.call('GET', `/iam/v2/identityProviders/${idp.uid}`)).body.scim;
  assert.is(got.credentialState, 'CREDENTIAL_STATE_REVOKED');
  assert.is(got.etag, revoked.body.etag);
  const stored = JSON.stringify(await query(s, 'select * from identity_providers where uid = ?', [idp.uid]));
  assert.not.ok(stored.includes(sha256(generated.body.token)), 'the digest is gone: nothing can match it');
  assert.is((await verb(idp.uid, 'generateScimToken')).status, 200, 'a revoked provider may generate again');

  const etag = await etagOf(idp.uid);
  assert.is((await verb(idp.uid, 'setScimEnabled', { enabled: true })).status, 400, 'etag is required');
  const lonely = await verb(idp.uid, 'setScimEnabled', { enabled: true, etag });
  assert.is(lonely.status, 400, 'one owner binding: not enough');
  assert.is(lonely.body.details.find((d: any) => d.violations)?.violations[0].type, 'TOO_FEW_OWNERS');
  const second = (await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'owner 2' })).body;
  await s.call('POST', `/iam/v2/roleBindings/${s.bootstrap.organization}`, { identityUid: second.uid, roleUid: owner });
  const on = await verb(idp.uid, 'setScimEnabled', { enabled: true, etag });
  assert.is(on.status, 200, JSON.stringify(on.body));
  assert.equal([on.body.enabled, on.body.identityProviderUid], [true, idp.uid]);
  assert.is((await verb(idp.uid, 'setScimEnabled', { enabled: false, etag })).status, 409, 'a stale etag');
  const off = await verb(idp.uid, 'setScimEnabled', { enabled: false, etag: on.body.etag });
  assert.is(off.body.enabled, false);
  assert.is((await verb(idp.uid, 'revokeScimToken')).body.enabled, false);
});

test('over gRPC: the same calls, numbered as the reference, with the same checks', async () => {
  const idp = await newProvider('grpc');
  const service = 'iam.v2.IdentityProvidersService';
  const generated = await c.call(service, 'GenerateScimToken', { identity_provider_uid: idp.uid });
  assert.is(generated.code, 0, JSON.stringify(generated));
  assert.match(generated.value.token, /^cgscim_/);
  const stale = await c.call(service, 'RegenerateScimToken', { identity_provider_uid: idp.uid, etag: idp.scim.etag });
  assert.is(stale.code, grpc.status.ABORTED);
  const r = await c.call(service, 'RegenerateScimToken', {
    identity_provider_uid: idp.uid,
    etag: generated.value.etag,
    overlap: { seconds: '120' },
  });
  assert.is(r.code, 0, JSON.stringify(r));
  assert.equal(r.value.requested_overlap, { seconds: '120', nanos: 0 });
  const got = await c.call(service, 'GetIdentityProvider', { uid: idp.uid });
  assert.is(got.value.scim.credential_state, 'CREDENTIAL_STATE_ROTATING');
  assert.is(got.value.scim.etag, r.value.etag);
  const revoked = await c.call(service, 'RevokeScimToken', { identity_provider_uid: idp.uid });
  assert.is(revoked.code, 0);
  const stranger = (await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' })).body;
  const denied = await c.call(
    service,
    'RevokeScimToken',
    { identity_provider_uid: idp.uid },
    await s.mint(stranger.uid),
  );
  assert.is(denied.code, grpc.status.PERMISSION_DENIED);
});

test.run();
