// What the reference's Terraform provider (terraform-provider-chainguard) does in one `terraform apply` and
// `destroy`, replayed call for call through a codec made from the reference's own protos (test/facts/, not ours):
// the token exchange over gRPC, then every resource it manages through iam v2beta1 created, read, updated with the
// masks its Update sends and deleted, its data sources' lookups by name, the v2beta1 repo list, its v1 calls for
// subscriptions, repos, tags and identities, and the empty v1 lists it reads after the deletes.
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { callReference, readFacts, referenceRoot, type ReferenceAnswer } from './support/reference-protos.js';
import { startTestServer, type TestServer } from './support/server.js';
import { startUpstreamIssuer, type UpstreamIssuer } from './support/upstream-issuer.js';

const root = referenceRoot(readFacts(['v2beta1', 'v1']));
let s: TestServer;
let upstream: UpstreamIssuer;
let client: grpc.Client;
/** The token the exchange issued: every call after the exchange carries it, as the provider's do. */
let token = '';

const call = (service: string, rpc: string, request: object) =>
  callReference(root, client, service, rpc, request, token);
/** The answer of a call that must succeed. */
async function ok(service: string, rpc: string, request: object): Promise<any> {
  const a: ReferenceAnswer = await call(service, rpc, request);
  assert.is(a.code, 0, `${service}/${rpc}: ${a.message} ${JSON.stringify(a.details)}`);
  return a.value;
}
const iam = (service: string) => `iam.v2beta1.${service}Service`;
const mask = (...paths: string[]) => ({ paths });

test.before(async () => {
  s = await startTestServer();
  upstream = await startUpstreamIssuer();
  client = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
});
test.after(async () => {
  client.close();
  await upstream.stop();
  await s.stop();
});

/** The provider's login: an identity of the organization (made by its owner) assumed with an upstream token. */
async function exchange(org: string): Promise<string> {
  const subject = 'repo:acme/infra:ref:refs/heads/main';
  const identity = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'terraform',
    claimMatch: { issuer: upstream.url, subject },
  });
  const owner = (await s.call('GET', '/iam/v2/roles?name=owner')).body.roles[0].uid;
  await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: identity.body.uid, roleUid: owner });
  const upstreamToken = await upstream.sign({ sub: subject, aud: s.url });
  const sts = (request: object, bearer: string) =>
    callReference(root, client, 'oidc.SecurityTokenService', 'Exchange', request, bearer);
  const exchanged = await sts({ aud: [s.url], identity: identity.body.uid, scope: '', cap: [] }, upstreamToken);
  assert.is(exchanged.code, 0, `${exchanged.message}`);
  assert.ok(exchanged.value.token, 'a RawToken');
  const refused = await sts({ aud: [s.url], identity: identity.body.uid }, 'not-a-token');
  assert.is(refused.code, grpc.status.UNAUTHENTICATED);
  return exchanged.value.token;
}

const G = iam('Groups');
const I = iam('Identities');
const R = iam('Roles');
const B = iam('RoleBindings');
const V = iam('GroupInvites');
const P = iam('IdentityProviders');
const A = iam('AccountAssociations');
const Reg = 'registry.Registry';
const Sub = 'events.Subscriptions';
const org = () => s.bootstrap.organization;
/** What the apply made, for the steps after it (uvu runs a file's tests in order). */
let group: any,
  viewer: any,
  identity: any,
  role: any,
  binding: any,
  invite: any,
  idp: any,
  assoc: any,
  repo: any,
  tag: any,
  sub: any;

test('the login: the token exchange over gRPC (SecurityTokenService/Exchange), the upstream token as bearer', async () => {
  token = await exchange(org());
});

test('chainguard_group: create, read, update with the mask name, description, verified', async () => {
  // chainguard_group (a folder): create, read, update with the mask the provider sends, read back.
  group = await ok(G, 'CreateGroup', {
    parent: org(),
    group: { name: 'platform', description: 'infra', verified: false, kind: 'ORG_KIND_UNSPECIFIED' },
  });
  assert.ok(group.uid.startsWith(`${org()}/`), group.uid);
  assert.is((await ok(G, 'GetGroup', { uid: group.uid })).name, 'platform');
  const renamed = await ok(G, 'UpdateGroup', {
    group: { uid: group.uid, name: 'platform-team', description: 'the infra team', verified: false },
    update_mask: mask('name', 'description', 'verified'),
  });
  assert.equal([renamed.name, renamed.description], ['platform-team', 'the infra team']);
});

test('data sources: a group and the built-in roles by name, with the empty uidp filter', async () => {
  // data "chainguard_group" and "chainguard_role": by name, with the empty uidp filter of parent "/" (or none).
  const byName = await ok(G, 'ListGroups', { uidp: {}, name: 'platform-team' });
  assert.equal(
    byName.groups.map((g: any) => g.uid),
    [group.uid],
  );
  const roleNamed = async (name: string) => (await ok(iam('Roles'), 'ListRoles', { uidp: {}, name })).roles;
  [viewer] = await roleNamed('viewer');
  const [pull] = await roleNamed('registry.pull');
  assert.equal([viewer?.name, pull?.name], ['viewer', 'registry.pull'], 'the built-in roles, found at the root');
  assert.ok(viewer.capabilities.includes('CAP_REPO_LIST'), JSON.stringify(viewer.capabilities));
  assert.ok(!viewer.uid.includes('/'), 'a built-in role is a root record');
});

test('chainguard_identity, chainguard_role, chainguard_rolebinding: create, read, update with *', async () => {
  // chainguard_identity: create, read, update with "*" (the whole identity as planned).
  const claims = {
    issuer: 'https://token.actions.githubusercontent.com',
    subject: 'repo:acme/app:ref:refs/heads/main',
  };
  identity = await ok(I, 'CreateIdentity', {
    parent: group.uid,
    identity: { name: 'ci', description: 'CI', claim_match: claims },
  });
  assert.is((await ok(I, 'GetIdentity', { uid: identity.uid })).claim_match.subject, claims.subject);
  const moved = await ok(I, 'UpdateIdentity', {
    identity: {
      uid: identity.uid,
      name: 'ci',
      description: 'CI of app',
      claim_match: { ...claims, subject_pattern: 'repo:acme/app:.*', subject: undefined },
    },
    update_mask: mask('*'),
  });
  assert.equal([moved.description, moved.claim_match.subject_pattern], ['CI of app', 'repo:acme/app:.*']);

  // chainguard_role: create, read, update with "*".
  role = await ok(R, 'CreateRole', {
    parent: group.uid,
    role: { name: 'puller', description: 'pulls', capabilities: ['CAP_REPO_LIST'] },
  });
  assert.is((await ok(R, 'GetRole', { uid: role.uid })).name, 'puller');
  const widened = await ok(R, 'UpdateRole', {
    role: {
      uid: role.uid,
      name: 'puller',
      description: 'pulls',
      capabilities: ['CAP_REPO_LIST', 'CAP_MANIFEST_METADATA_LIST'],
    },
    update_mask: mask('*'),
  });
  assert.equal(widened.capabilities, ['CAP_REPO_LIST', 'CAP_MANIFEST_METADATA_LIST']);

  // chainguard_rolebinding: create in the group, read, update with "*" (the role changed).
  binding = await ok(B, 'CreateRoleBinding', {
    parent: group.uid,
    role_binding: { identity_uid: identity.uid, role_uid: role.uid },
  });
  assert.is((await ok(B, 'GetRoleBinding', { uid: binding.uid })).identity_uid, identity.uid);
  const rebound = await ok(B, 'UpdateRoleBinding', {
    role_binding: { uid: binding.uid, identity_uid: identity.uid, role_uid: viewer.uid },
    update_mask: mask('*'),
  });
  assert.is(rebound.role_uid, viewer.uid);
});

test('chainguard_group_invite, chainguard_identity_provider, chainguard_account_associations', async () => {
  // chainguard_group_invite: create (ttl from the planned expiration), read; no update; delete.
  invite = await ok(V, 'CreateGroupInvite', {
    parent: group.uid,
    group_invite: { ttl: { seconds: 3600 }, role_uid: viewer.uid, email: 'dev@acme.example' },
  });
  assert.ok(invite.code, 'the invite code is answered once, at create');
  await ok(V, 'GetGroupInvite', { uid: invite.uid });

  // chainguard_identity_provider: create, read, update with "*" (the whole provider, its secret again).
  const oidc = {
    issuer: 'https://idp.acme.example',
    client_id: 'chainguard',
    client_secret: 's3cr3t',
    additional_scopes: ['email'],
  };
  idp = await ok(P, 'CreateIdentityProvider', {
    parent: group.uid,
    identity_provider: { name: 'acme-sso', description: 'SSO', default_role: viewer.uid, oidc },
  });
  assert.is((await ok(P, 'GetIdentityProvider', { uid: idp.uid })).oidc.issuer, oidc.issuer);
  const idp2 = await ok(P, 'UpdateIdentityProvider', {
    identity_provider: {
      uid: idp.uid,
      name: 'acme-sso',
      description: 'SSO of acme',
      default_role: viewer.uid,
      oidc: { ...oidc, additional_scopes: ['email', 'profile'] },
    },
    update_mask: mask('*'),
  });
  assert.equal([idp2.description, idp2.oidc.additional_scopes], ['SSO of acme', ['email', 'profile']]);

  // chainguard_account_associations: create on the group, read, update with "*".
  assoc = await ok(A, 'CreateAccountAssociation', {
    parent: group.uid,
    account_association: { name: 'clouds', description: 'ours', amazon: { account: '123456789012' } },
  });
  assert.is((await ok(A, 'GetAccountAssociation', { uid: assoc.uid })).amazon.account, '123456789012');
  const assoc2 = await ok(A, 'UpdateAccountAssociation', {
    account_association: {
      uid: assoc.uid,
      name: 'clouds',
      description: 'ours',
      amazon: { account: '123456789012' },
      google: { project_id: 'acme-prod', project_number: '42' },
    },
    update_mask: mask('*'),
  });
  assert.is(assoc2.google.project_id, 'acme-prod');
});

test('v1 repos (readme included) and tags, the v2beta1 repo list, v1 subscriptions, Identities/Lookup', async () => {
  // chainguard_image_repo (v1), chainguard_image_tag (v1), data "chainguard_image_repos" (v2beta1).
  repo = await ok(Reg, 'CreateRepo', {
    parent_id: org(),
    repo: {
      name: 'app',
      bundles: ['application'],
      readme: '# app',
      catalog_tier: 'APPLICATION',
      aliases: ['app-alias'],
      active_tags: ['latest'],
      description: 'the app',
    },
  });
  assert.equal([repo.readme, (await ok(Reg, 'ListRepos', { id: repo.id })).items[0].readme], ['# app', '# app']);
  const repo2 = await ok(Reg, 'UpdateRepo', {
    id: repo.id,
    name: 'app',
    bundles: ['application'],
    readme: '# app, updated',
    description: 'the app, updated',
    catalog_tier: 'APPLICATION',
    aliases: ['app-alias'],
    active_tags: ['latest'],
  });
  assert.equal([repo2.description, repo2.readme], ['the app, updated', '# app, updated']);
  // data "chainguard_image_repo" reads the readme from v1 ListRepos by id; v2 keeps it in the readme subresource.
  assert.is((await ok(Reg, 'ListRepos', { id: repo.id })).items[0].readme, '# app, updated');
  const readme = await ok('registry.v2beta1.ReposService', 'GetRepoReadme', { uid: repo.id });
  assert.is(readme.content, '# app, updated');
  const repos = await ok('registry.v2beta1.ReposService', 'ListRepos', { uidp: { children_of: org() }, name: 'app' });
  assert.equal(
    repos.repos.map((r: any) => r.uid),
    [repo.id],
  );
  tag = await ok(Reg, 'CreateTag', { repo_id: repo.id, tag: { name: 'v1', bundles: [], deprecated: false } });
  assert.equal(
    (await ok(Reg, 'ListTags', { id: tag.id })).items.map((t: any) => t.name),
    ['v1'],
  );
  const tag2 = await ok(Reg, 'UpdateTag', { id: tag.id, name: 'v1', bundles: [], deprecated: true });
  assert.is(tag2.deprecated, true);

  // chainguard_subscription (v1): create, list by id.
  sub = await ok(Sub, 'Create', { parent_id: org(), subscription: { sink: 'http://127.0.0.1:9/hook' } });
  assert.equal(
    (await ok(Sub, 'List', { id: sub.id })).items.map((x: any) => x.id),
    [sub.id],
  );

  // data "chainguard_identity": v1 Lookup by issuer and subject; the organization listed by id (v1 Groups/List).
  const found = await ok('iam.Identities', 'Lookup', {
    issuer: upstream.url,
    subject: 'repo:acme/infra:ref:refs/heads/main',
  });
  assert.is(found.name, 'terraform');
  assert.equal(
    (await ok('iam.Groups', 'List', { id: org() })).items.map((g: any) => g.id),
    [org()],
  );
});

test('destroy: every delete; the gone records are NOT_FOUND to Get and Delete, and empty v1 lists', async () => {
  // destroy: every delete, then each read the provider makes of a gone record.
  await ok(Sub, 'Delete', { id: sub.id });
  await ok(Reg, 'DeleteTag', { id: tag.id });
  await ok(Reg, 'DeleteRepo', { id: repo.id });
  await ok(A, 'DeleteAccountAssociation', { uid: assoc.uid });
  await ok(P, 'DeleteIdentityProvider', { uid: idp.uid });
  await ok(V, 'DeleteGroupInvite', { uid: invite.uid });
  await ok(B, 'DeleteRoleBinding', { uid: binding.uid });
  await ok(R, 'DeleteRole', { uid: role.uid });
  await ok(I, 'DeleteIdentity', { uid: identity.uid });
  await ok(G, 'DeleteGroup', { uid: group.uid });
  for (const [service, rpc, uid] of [
    [G, 'GetGroup', group.uid],
    [I, 'GetIdentity', identity.uid],
    [R, 'GetRole', role.uid],
    [B, 'GetRoleBinding', binding.uid],
    [V, 'GetGroupInvite', invite.uid],
    [P, 'GetIdentityProvider', idp.uid],
    [A, 'GetAccountAssociation', assoc.uid],
  ]) {
    const gone = await call(service, rpc, { uid });
    assert.is(gone.code, grpc.status.NOT_FOUND, `${rpc} of a deleted record (the provider drops it from state)`);
    const again = await call(service, rpc.replace('Get', 'Delete'), { uid });
    assert.is(
      again.code,
      grpc.status.NOT_FOUND,
      `${rpc.replace('Get', 'Delete')} again (the provider takes it as done)`,
    );
  }
  for (const [service, rpc, id] of [
    [Sub, 'List', sub.id],
    [Reg, 'ListRepos', repo.id],
    [Reg, 'ListTags', tag.id],
    ['iam.Groups', 'List', group.uid],
    ['iam.Identities', 'List', identity.uid],
    ['iam.Roles', 'List', role.uid],
  ])
    assert.equal((await ok(service, rpc, { id })).items, [], `v1 ${service}/${rpc} by a gone id is empty`);
});

test.run();
