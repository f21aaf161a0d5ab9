// Behaviours beyond plain CRUD, declared in the spec or hand-written: events, upserts, exclusive fields,
// references, terms, invites.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SecretSeal } from '../runtime/storage/secret-seal.js';
import { readConfig } from '../runtime/operate/config.js';
import { startServer } from '../server/server.js';
import { query } from './support/db.js';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
});
test.after(async () => s.stop());

const events = (subject: string) =>
  query(s, 'select type, subject, group_uid, actor, body from event_outbox where subject = ? order by seq', [subject]);

test('every create, update and delete records its event in the outbox, with actor and group', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'evented' })).body;
  await s.call('PATCH', `/registry/v2/repos/${repo.uid}`, { description: 'changed' });
  await s.call('PATCH', `/registry/v2/repos/${repo.uid}`, { colour: 'rejected' });
  await s.call('DELETE', `/registry/v2/repos/${repo.uid}`);
  const rows = await events(repo.uid);
  assert.equal(
    rows.map((r) => r.type),
    [
      'dev.chainguard.api.platform.registry.repo.created.v1',
      'dev.chainguard.api.platform.registry.repo.updated.v1',
      'dev.chainguard.api.platform.registry.repo.deleted.v1',
    ],
    'a rejected update records nothing',
  );
  assert.ok(rows.every((r) => r.group_uid === org && r.actor === s.bootstrap.owner));
  assert.is(JSON.parse(rows[1].body).description, 'changed');
  assert.equal(JSON.parse(rows[2].body), { uid: repo.uid });
});

test('a write refused by a precondition records no event', async () => {
  const g = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'busy' })).body;
  await s.call('POST', `/registry/v2/repos/${g.uid}`, { name: 'child' });
  assert.is((await s.call('DELETE', `/iam/v2/groups/${g.uid}`)).status, 400);
  assert.equal(
    (await events(g.uid)).map((r) => r.type),
    ['dev.chainguard.api.iam.group.created.v1'],
  );
});

test('the event of a tag names the group above its repo', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'tags' })).body;
  const tag = (
    await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: 'v1', digest: `sha256:${'1'.repeat(64)}` })
  ).body;
  const [created] = await events(tag.uid);
  assert.is(created.type, 'dev.chainguard.api.platform.registry.tag.created.v1');
  assert.is(created.group_uid, org);
});

test('creating a tag with a name the repo already has moves that tag', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'upsert' })).body;
  const first = (
    await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: 'latest', digest: `sha256:${'a'.repeat(64)}` })
  ).body;
  const moved = await s.call('POST', `/registry/v2/tags/${repo.uid}`, {
    name: 'latest',
    digest: `sha256:${'b'.repeat(64)}`,
    deprecated: true,
  });
  assert.is(moved.status, 200, JSON.stringify(moved.body));
  assert.is(moved.body.uid, first.uid);
  assert.is(moved.body.digest, `sha256:${'b'.repeat(64)}`);
  assert.is(moved.body.deprecated, true, 'deprecated marks end of life');
  const list = await s.call('GET', `/registry/v2/tags?uidp.children_of=${repo.uid}`);
  assert.is(list.body.totalCount, '1');
  const other = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'upsert-other' })).body;
  const elsewhere = (
    await s.call('POST', `/registry/v2/tags/${other.uid}`, { name: 'latest', digest: `sha256:${'c'.repeat(64)}` })
  ).body;
  assert.is.not(elsewhere.uid, first.uid, 'names are per repo');
});

test('an identity has at most one way of matching tokens', async () => {
  const both = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'both',
    claimMatch: { issuer: 'https://a', subject: 'b' },
    servicePrincipal: 'SERVICE_PRINCIPAL_INGESTER',
  });
  assert.is(both.status, 400);
  assert.equal(
    both.body.details[1].fieldViolations.map((v: any) => v.field),
    ['claimMatch', 'servicePrincipal'],
  );
  const one = (
    await s.call('POST', `/iam/v2/identities/${org}`, {
      name: 'one',
      claimMatch: { issuer: 'https://a', subject: 'b' },
    })
  ).body;
  assert.is(
    (await s.call('PATCH', `/iam/v2/identities/${one.uid}`, { awsIdentity: { awsAccount: '123456789012' } })).status,
    400,
  );
  const swapped = await s.call('PATCH', `/iam/v2/identities/${one.uid}?updateMask=claimMatch,awsIdentity`, {
    awsIdentity: { awsAccount: '123456789012' },
  });
  assert.is(swapped.status, 200, JSON.stringify(swapped.body));
  assert.is(swapped.body.claimMatch, undefined);
});

test('a created identity has a lastSeenTime, its create time, in v2 and in v1; an update does not move it', async () => {
  const created = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'seen',
    lastSeenTime: '2001-01-01T00:00:00.000Z',
  });
  assert.is(created.status, 200, JSON.stringify(created.body));
  assert.is(created.body.lastSeenTime, created.body.createTime, 'set by the server; the body cannot set it');
  assert.is((await s.call('GET', `/iam/v2/identities/${created.body.uid}`)).body.lastSeenTime, created.body.createTime);
  const updated = await s.call('PATCH', `/iam/v2/identities/${created.body.uid}`, { description: 'later' });
  assert.is(updated.body.lastSeenTime, created.body.createTime);
  const v1 = await s.call('POST', `/iam/v1/identities/${org}`, { name: 'seen-in-v1' });
  assert.is(v1.status, 200, JSON.stringify(v1.body));
  assert.is(v1.body.last_seen, v1.body.created_at);
});

test('identity providers: the client secret is never returned; the default role must exist', async () => {
  const viewer = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const oidc = { issuer: 'https://idp.example', clientId: 'platform', clientSecret: 's3cret' };
  const idp = await s.call('POST', `/iam/v2/identityProviders/${org}`, { name: 'corp', defaultRole: viewer, oidc });
  assert.is(idp.status, 200, JSON.stringify(idp.body));
  assert.equal(idp.body.oidc, { issuer: 'https://idp.example', clientId: 'platform' });
  assert.not.match(JSON.stringify((await s.call('GET', `/iam/v2/identityProviders/${idp.body.uid}`)).body), /s3cret/);
  assert.not.match(JSON.stringify((await s.call('GET', '/iam/v2/identityProviders')).body), /s3cret/);
  const stored = await query(s, 'select oidc from identity_providers where uid = ?', [idp.body.uid]);
  // Kept for the login flow, sealed with the secrets key (DATA_DIR's key file here): never in plain text.
  assert.not.match(stored[0].oidc, /s3cret/);
  const sealed = JSON.parse(stored[0].oidc).clientSecret;
  assert.match(sealed, /^sealed:v1:[0-9a-f]{8}:/);
  const seal = SecretSeal.open(s.dataDir, undefined);
  assert.is(seal.unseal(sealed, 'oidc.clientSecret'), 's3cret');
  assert.throws(() => seal.unseal(sealed, 'oidc.clientId'), 'bound to its field');
  // Changed, and answered, through every API: the secret is in no answer and in no event.
  const changed = await s.call('PATCH', `/iam/v2/identityProviders/${idp.body.uid}`, {
    oidc: { ...oidc, clientSecret: 's3cret-2' },
  });
  assert.is(changed.status, 200, JSON.stringify(changed.body));
  const v1 = await s.call('GET', `/iam/v1/identityProviders?id=${idp.body.uid}`);
  assert.is(v1.status, 200, JSON.stringify(v1.body));
  assert.is(v1.body.items.length, 1);
  const c = grpcClient(s.url, s.token);
  const rpc = await c.call('iam.v2.IdentityProvidersService', 'GetIdentityProvider', { uid: idp.body.uid });
  c.close();
  assert.is(rpc.value?.oidc?.client_id, 'platform', JSON.stringify(rpc));
  for (const answer of [changed.body, v1.body, rpc.value]) assert.not.match(JSON.stringify(answer), /s3cret/);
  assert.not.match(JSON.stringify(await query(s, 'select * from event_outbox')), /s3cret/);
  const restored = await query(s, 'select oidc from identity_providers where uid = ?', [idp.body.uid]);
  assert.is(seal.unseal(JSON.parse(restored[0].oidc).clientSecret, 'oidc.clientSecret'), 's3cret-2');
  // A database from before sealing (a plain value in the row): the next start seals it, in place.
  await query(s, 'update identity_providers set oidc = ? where uid = ?', [JSON.stringify(oidc), idp.body.uid], true);
  const next = await startServer(readConfig({ PORT: '0', HOST: '127.0.0.1', LOG: 'off', EVENTS: 'off', ...s.env }));
  await next.close();
  const resealed = await query(s, 'select oidc from identity_providers where uid = ?', [idp.body.uid]);
  assert.not.match(resealed[0].oidc, /s3cret/);
  assert.is(seal.unseal(JSON.parse(resealed[0].oidc).clientSecret, 'oidc.clientSecret'), 's3cret');
  const noRole = await s.call('POST', `/iam/v2/identityProviders/${org}`, {
    name: 'broken',
    defaultRole: 'f'.repeat(40),
    oidc,
  });
  assert.is(noRole.status, 400);
  assert.match(noRole.body.message, /defaultRole/);
});

test('terms: accept known documents for a group; list includes acceptances of the organization above', async () => {
  const folder = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'terms' })).body.uid;
  const atOrg = await s.call('POST', `/iam/v2/terms/${org}`, { documentIds: ['platform-terms-of-service-2025-01'] });
  assert.equal(atOrg.body, { documentIds: ['platform-terms-of-service-2025-01'], group: org });
  await s.call('POST', `/iam/v2/terms/${folder}`, {
    documentIds: ['platform-privacy-notice-2025-01', 'platform-privacy-notice-2025-01'],
  });
  await s.call('POST', `/iam/v2/terms/${folder}`, { documentIds: ['platform-privacy-notice-2025-01'] });
  const listed = await s.call('GET', `/iam/v2/terms/${folder}`);
  assert.is(listed.status, 200, JSON.stringify(listed.body));
  assert.is(listed.body.totalCount, '2', 'accepting twice records once');
  assert.equal(listed.body.termsAcceptances.map((a: any) => a.docId).sort(), [
    'platform-privacy-notice-2025-01',
    'platform-terms-of-service-2025-01',
  ]);
  assert.ok(listed.body.termsAcceptances.every((a: any) => a.acceptedBy === s.bootstrap.owner));
  const orgOnly = await s.call('GET', `/iam/v2/terms/${org}?page_size=1`);
  assert.is(orgOnly.body.totalCount, '1', 'a folder acceptance does not apply above it');
  const unknown = await s.call('POST', `/iam/v2/terms/${folder}`, { documentIds: ['made-up'] });
  assert.is(unknown.status, 400);
  assert.is(unknown.body.code, 3);
  assert.is((await s.call('POST', `/iam/v2/terms/${folder}`, { documentIds: [] })).status, 400);
  const viewerRole = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const viewer = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'reader' })).body.uid;
  await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: viewer, roleUid: viewerRole });
  const token = { authorization: `Bearer ${await s.mint(viewer)}` };
  assert.is((await s.call('GET', `/iam/v2/terms/${folder}`, undefined, token)).status, 200, 'viewers may list');
  assert.is(
    (await s.call('POST', `/iam/v2/terms/${folder}`, { documentIds: ['platform-acceptable-use-2025-01'] }, token))
      .status,
    403,
    'only owners accept',
  );
  assert.equal((await query(s, "select type from event_outbox where type like '%terms.accepted%'")).length, 3);
});

test('group invites: code shown once, never listed; accepting binds the role; single use; expiry', async () => {
  const viewerRole = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const team = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'invited' })).body.uid;
  const created = await s.call('POST', `/iam/v2/groupInvites/${team}`, {
    roleUid: viewerRole,
    ttl: '3600s',
    singleUse: true,
    email: 'new@example.dev',
  });
  assert.is(created.status, 200, JSON.stringify(created.body));
  const invite = created.body;
  assert.match(invite.code, /^[0-9a-f]{16}\./);
  assert.is(invite.ttl, undefined);
  assert.ok(Math.abs(Date.parse(invite.expirationTime) - Date.parse(invite.createTime) - 3600_000) < 5);
  assert.is(invite.codeHash, undefined);
  const listed = await s.call('GET', `/iam/v2/groupInvites?uidp.children_of=${team}`);
  assert.not.match(JSON.stringify(listed.body), /"code"|codeHash/);
  assert.is((await s.call('GET', `/iam/v2/groupInvites/${invite.uid}`)).body.code, undefined);
  // Its event shows when it expires and nothing else (no key id, email or role), as the reference's does.
  const [event] = await events(invite.uid);
  assert.equal(JSON.parse(event.body), { uid: invite.uid, expirationTime: invite.expirationTime });
  // This one names an email, which only that verified email redeems (test/group-access.test.ts): one for anyone.
  const open = await s.call('POST', `/iam/v2/groupInvites/${team}`, {
    roleUid: viewerRole,
    ttl: '3600s',
    singleUse: true,
  });
  assert.is(open.status, 200, JSON.stringify(open.body));
  const { code } = open.body;

  const newcomer = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'newcomer' })).body.uid;
  const as = { authorization: `Bearer ${await s.mint(newcomer)}` };
  assert.is(
    (await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${team}`, undefined, as)).body.totalCount,
    '0',
  );
  assert.is(
    (await s.call('POST', '/iam/v2/groupInvites:accept', { code: `${code}x` }, as)).status,
    404,
    'a wrong code',
  );
  const accepted = await s.call('POST', '/iam/v2/groupInvites:accept', { code: code }, as);
  assert.is(accepted.status, 200, JSON.stringify(accepted.body));
  assert.is(accepted.body.group, team);
  const binding = (await s.call('GET', `/iam/v2/roleBindings/${accepted.body.roleBinding}`)).body;
  assert.is(binding.identity.uid, newcomer);
  assert.is(binding.role.name, 'viewer');
  assert.is((await s.call('GET', `/iam/v2/groups/${team}`, undefined, as)).status, 200, 'the new binding works');
  assert.is((await s.call('POST', '/iam/v2/groupInvites:accept', { code: code }, as)).status, 404, 'single use');

  const short = (await s.call('POST', `/iam/v2/groupInvites/${team}`, { roleUid: viewerRole, ttl: '1s' })).body;
  await new Promise((r) => setTimeout(r, 1100));
  const late = await s.call('POST', '/iam/v2/groupInvites:accept', { code: short.code }, as);
  assert.is(late.status, 400, JSON.stringify(late.body));
  assert.is(late.body.code, 9);
  assert.is((await s.call('POST', `/iam/v2/groupInvites/${team}`, { roleUid: viewerRole, ttl: '0s' })).status, 400);
});

test.run();
