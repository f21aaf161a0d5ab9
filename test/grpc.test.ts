// gRPC on the HTTP port, through a real grpc-js client built from the generated protos: every rpc of every domain,
// the same answers as HTTP (one pipeline), errors with their google.rpc.Status details, tokens, reflection, limits.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig } from '../runtime/operate/config.js';
import { startServer } from '../server/server.js';
import { grpcClient, loadDefinitions, type GrpcReply, type GrpcTestClient } from './support/grpc-client.js';
import { query } from './support/db.js';
import { runScript } from './support/process.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let c: GrpcTestClient;
let org: string;
/** what the first iam test makes and the second uses and deletes */
let iam: Record<'team' | 'robot' | 'role' | 'binding' | 'viewer', string>;
const called = new Set<string>();

/** Calls an rpc and records it; `want` is the status code expected (OK by default). */
async function rpc(service: string, name: string, request: object, want = 0, token?: string): Promise<any> {
  const r = await c.call(service, name, request, token);
  called.add(`${service}/${name}`);
  assert.is(r.code, want, `${service}/${name}: ${r.message ?? ''} ${JSON.stringify(r.details)}`);
  return want === 0 ? r.value : r;
}

const detail = (r: GrpcReply, type: string): any =>
  r.details.find((d) => d['@type'] === `type.googleapis.com/google.rpc.${type}`);

test.before(async () => {
  s = await startTestServer();
  c = grpcClient(s.url, s.token);
  org = s.bootstrap.organization;
});
test.after(async () => {
  c.close();
  await s.stop();
});

test('registry: repos (with the readme sub-resource) and tags, the same records HTTP serves', async () => {
  const R = 'registry.v2.ReposService';
  const repo = await rpc(R, 'CreateRepo', {
    parent: org,
    repo: { name: 'nginx', catalog_tier: 'CATALOG_TIER_BASE', sync_config: { source: 'cgr.dev/x' } },
  });
  assert.match(repo.uid, new RegExp(`^${org}/[0-9a-f]{16}$`));
  assert.equal(repo.sync_config, { source: 'cgr.dev/x' });
  await rpc(R, 'CreateRepo', { parent: org, repo: { name: 'python' } });
  const http = (await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body;
  const got = await rpc(R, 'GetRepo', { uid: repo.uid });
  assert.is(got.name, http.name);
  assert.is(got.catalog_tier, http.catalogTier);
  assert.is(new Date(Number(got.create_time.seconds) * 1000).toISOString().slice(0, 19), http.createTime.slice(0, 19));

  const page = await rpc(R, 'ListRepos', { uidp: { descendants_of: org }, page_size: 1, order_by: 'name' });
  assert.is(page.repos.length, 1);
  assert.is(page.repos[0].name, 'nginx');
  assert.is(page.total_count, '2');
  const next = await rpc(R, 'ListRepos', {
    uidp: { descendants_of: org },
    page_size: 1,
    order_by: 'name',
    page_token: page.next_page_token,
  });
  assert.is(next.repos[0].name, 'python');
  assert.is((await rpc(R, 'ListRepos', { name: 'python' })).repos.length, 1, 'a filter');
  assert.is((await rpc(R, 'ListRepos', { skip: 1, uidp: { descendants_of: org } })).skipped, 1);

  const updated = await rpc(R, 'UpdateRepo', {
    repo: { uid: repo.uid, description: 'web', sync_config: { source: 'cgr.dev/y' }, name: 'ignored' },
    update_mask: { paths: ['description', 'sync_config.source'] },
  });
  assert.is(updated.description, 'web');
  assert.is(updated.name, 'nginx', 'a field outside the mask is kept');
  assert.is((await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body.sync_config.source, 'cgr.dev/y');

  await rpc(R, 'UpdateRepoReadme', {
    repo_readme: { uid: repo.uid, content: '# nginx' },
    update_mask: { paths: ['content'] },
  });
  assert.is((await rpc(R, 'GetRepoReadme', { uid: repo.uid })).content, '# nginx');

  const T = 'registry.v2.TagsService';
  const digest = `sha256:${'a'.repeat(64)}`;
  const tag = await rpc(T, 'CreateTag', { parent: repo.uid, tag: { name: 'latest', digest } });
  assert.is((await rpc(T, 'GetTag', { uid: tag.uid })).digest, digest);
  assert.is((await rpc(T, 'ListTags', { uidp: { children_of: repo.uid }, digest })).tags.length, 1);
  assert.equal(await rpc(T, 'DeleteTag', { uid: tag.uid }), {});
  await rpc(T, 'GetTag', { uid: tag.uid }, grpc.status.NOT_FOUND);
  const scratch = await rpc(R, 'CreateRepo', { parent: org, repo: { name: 'scratch' } });
  assert.equal(await rpc(R, 'DeleteRepo', { uid: scratch.uid }), {});
  const events = await query(s, 'select type, actor from event_outbox where subject = ? order by seq', [scratch.uid]);
  assert.equal(
    events.map((e) => [e.type, e.actor]),
    [
      ['dev.chainguard.api.platform.registry.repo.created.v1', s.bootstrap.owner],
      ['dev.chainguard.api.platform.registry.repo.deleted.v1', s.bootstrap.owner],
    ],
    'writes over gRPC record their events as HTTP writes do',
  );
});

test('imported data: images, advisories, documents, metadata, resolved reports, artifacts', async () => {
  for (const [resource, file] of [
    ['images', 'samples/images.json'],
    ['advisories', 'samples/advisories.json'],
    ['documents', 'samples/documents.json'],
    ['vulnerabilityMetadata', 'samples/vulnerabilityMetadata.json'],
    ['resolvedVulnsReports', 'samples/resolvedVulnsReports.json'],
    ['artifacts', 'samples/artifacts.ndjson'],
    ['artifactVersions', 'samples/artifactVersions.json'],
  ]) {
    const r = await runScript('scripts/import.ts', [resource, file, '--parent', org], s.env);
    assert.is(r.status, 0, r.stderr);
  }
  const [nginx] = (await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${org}&name=nginx`)).body.repos;
  const digest = 'sha256:6515f83e7ba5810842059cf6b2b7279a3073b9d141623e62cc825050025113e0';
  const I = 'registry.v2.ImagesService';
  assert.equal((await rpc(I, 'GetArchitectures', { repo_uid: nginx.uid, digest })).architectures, ['amd64', 'arm64']);
  assert.equal(await rpc(I, 'GetSize', { repo_uid: nginx.uid, digest, architecture: 'arm64' }), {
    architecture: 'arm64',
    size: '18805127',
  });

  const A = 'vulnerabilities.v2.AdvisoriesService';
  const advisories = await rpc(A, 'ListAdvisories', { uidp: { descendants_of: org }, artifact_names: ['nginx'] });
  assert.ok(advisories.advisories.length > 0);
  const http = (await s.call('GET', `/vulnerabilities/v2/advisories?uidp.descendants_of=${org}&artifactNames=nginx`))
    .body;
  assert.is(advisories.total_count, http.totalCount);
  const one = await rpc(A, 'GetAdvisory', { uid: advisories.advisories[0].uid });
  assert.is(one.advisory_id, advisories.advisories[0].advisory_id);

  const S = 'advisory.v2.SecurityAdvisoryService';
  assert.ok((await rpc(S, 'ListDocuments', {})).documents.length > 0);
  const metadata = await rpc(S, 'ListVulnerabilityMetadata', { page_size: 1 });
  assert.is(metadata.vulnerability_metadata.length, 1);
  assert.ok((await rpc(S, 'ListResolvedVulnsReports', {})).resolved_vulns_reports.length > 0);

  const L = 'libraries.v2.ArtifactsService';
  const artifacts = await rpc(L, 'ListArtifacts', { ecosystems: ['ECOSYSTEM_PYTHON'], page_size: 2 });
  assert.ok(artifacts.artifacts.length > 0);
  const counts = await rpc(L, 'GetArtifactCount', { ecosystems: ['ECOSYSTEM_PYTHON'] });
  assert.is(counts.counts[0].ecosystem, 'ECOSYSTEM_PYTHON');
  const requests = (await rpc(L, 'ListArtifacts', { query: 'requests' })).artifacts[0];
  const versions = await rpc(L, 'ListArtifactVersions', { artifact_id: requests.uid, page_size: 2 });
  assert.is(versions.artifact_versions.length, 2);
  assert.ok(versions.next_page_token, 'a next page');
});

test('iam: groups, identities, roles and role bindings', async () => {
  const G = 'iam.v2.GroupsService';
  const team = await rpc(G, 'CreateGroup', { parent: org, group: { name: 'team', description: 'a team' } });
  assert.is((await rpc(G, 'GetGroup', { uid: team.uid })).name, 'team');
  assert.ok((await rpc(G, 'ListGroups', { uidp: { children_of: org } })).groups.some((g: any) => g.uid === team.uid));
  const renamed = await rpc(G, 'UpdateGroup', {
    group: { uid: team.uid, name: 'crew' },
    update_mask: { paths: ['name'] },
  });
  assert.is(renamed.name, 'crew');
  assert.is(renamed.description, 'a team');

  const Id = 'iam.v2.IdentitiesService';
  const robot = await rpc(Id, 'CreateIdentity', {
    parent: team.uid,
    identity: { name: 'robot', claim_match: { issuer: 'https://issuer.example', subject: 'robot-1' } },
  });
  assert.is(robot.claim_match.issuer, 'https://issuer.example');
  assert.is(robot.claim_match.iss, 'issuer', 'the oneof of the claim match names the set field');
  assert.is(robot.relationship, 'claim_match', 'the oneof names the set field');
  assert.is((await rpc(Id, 'GetIdentity', { uid: robot.uid })).name, 'robot');
  const listed = await rpc(Id, 'ListIdentities', {
    uidp: { descendants_of: team.uid },
    relationship_type: 'RELATIONSHIP_TYPE_CLAIM_MATCH',
  });
  assert.equal(
    listed.identities.map((i: any) => i.uid),
    [robot.uid],
  );
  await rpc(Id, 'UpdateIdentity', {
    identity: { uid: robot.uid, description: 'ci' },
    update_mask: { paths: ['description'] },
  });
  const found = await rpc(Id, 'LookupIdentity', { issuer: 'https://issuer.example', subject: 'robot-1' });
  assert.is(found.uid, robot.uid);

  const Ro = 'iam.v2.RolesService';
  const role = await rpc(Ro, 'CreateRole', {
    parent: team.uid,
    role: { name: 'reader', capabilities: ['CAP_REPO_LIST'] },
  });
  assert.equal(role.capabilities, ['CAP_REPO_LIST']);
  assert.is((await rpc(Ro, 'GetRole', { uid: role.uid })).name, 'reader');
  assert.ok((await rpc(Ro, 'ListRoles', { uidp: { children_of: team.uid } })).roles.length >= 1);
  const widened = await rpc(Ro, 'UpdateRole', {
    role: { uid: role.uid, capabilities: ['CAP_REPO_LIST', 'CAP_TAG_LIST'] },
    update_mask: { paths: ['capabilities'] },
  });
  assert.equal(widened.capabilities, ['CAP_REPO_LIST', 'CAP_TAG_LIST']);

  const B = 'iam.v2.RoleBindingsService';
  const binding = await rpc(B, 'CreateRoleBinding', {
    parent: team.uid,
    role_binding: { identity_uid: robot.uid, role_uid: role.uid },
  });
  assert.is(binding.role_uid, role.uid);
  const hydrated = await rpc(B, 'GetRoleBinding', { uid: binding.uid });
  assert.is(hydrated.identity_uid, robot.uid);
  assert.equal([hydrated.identity.name, hydrated.role.name, hydrated.group.name], ['robot', 'reader', 'crew']);
  assert.is(
    (await rpc(B, 'ListRoleBindings', { uidp: { children_of: team.uid }, identity: robot.uid })).role_bindings.length,
    1,
  );
  const viewer = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0];
  await rpc(B, 'UpdateRoleBinding', {
    role_binding: { uid: binding.uid, role_uid: viewer.uid },
    update_mask: { paths: ['role_uid'] },
  });

  iam = { team: team.uid, robot: robot.uid, role: role.uid, binding: binding.uid, viewer: viewer.uid };
});

test('iam: identity providers and their mappings, account associations, invites, terms; then deletes', async () => {
  const { viewer } = iam;
  const team = { uid: iam.team };
  const P = 'iam.v2.IdentityProvidersService';
  const idp = await rpc(P, 'CreateIdentityProvider', {
    parent: team.uid,
    identity_provider: {
      name: 'sso',
      default_role: viewer,
      oidc: { issuer: 'https://sso.example', client_id: 'app', client_secret: 's3cret' },
    },
  });
  assert.is(idp.oidc.client_secret, undefined, 'an input-only field is never returned');
  assert.is((await rpc(P, 'GetIdentityProvider', { uid: idp.uid })).name, 'sso');
  assert.is((await rpc(P, 'ListIdentityProviders', { uidp: { children_of: team.uid } })).identity_providers.length, 1);
  await rpc(P, 'UpdateIdentityProvider', {
    identity_provider: { uid: idp.uid, description: 'corp' },
    update_mask: { paths: ['description'] },
  });
  // The SCIM token calls (their rules in scim.test.ts): each served, the etag of one the next's.
  const generated = await rpc(P, 'GenerateScimToken', { identity_provider_uid: idp.uid });
  const regenerated = await rpc(P, 'RegenerateScimToken', { identity_provider_uid: idp.uid, etag: generated.etag });
  const revoked = await rpc(P, 'RevokeScimToken', { identity_provider_uid: idp.uid });
  assert.is.not(revoked.etag, regenerated.etag);
  const switched = await rpc(
    P,
    'SetScimEnabled',
    { identity_provider_uid: idp.uid, enabled: true, etag: revoked.etag },
    grpc.status.FAILED_PRECONDITION,
  );
  assert.is(detail(switched, 'PreconditionFailure').violations[0].type, 'TOO_FEW_OWNERS');

  const M = 'iam.v2.ExternalGroupRoleMappingsService';
  const mapping = await rpc(M, 'CreateExternalGroupRoleMapping', {
    parent: idp.uid,
    external_group_role_mapping: { external_group_id: 'eng', role_uid: viewer },
  });
  assert.is((await rpc(M, 'GetExternalGroupRoleMapping', { uid: mapping.uid })).external_group_id, 'eng');
  assert.is(mapping.identity_provider_uid, idp.uid, 'the reference shows the provider as a field of its own');
  assert.is(
    (await rpc(M, 'ListExternalGroupRoleMappings', { uidp: { children_of: idp.uid } })).external_group_role_mappings
      .length,
    1,
  );
  await rpc(M, 'DeleteExternalGroupRoleMapping', { uid: mapping.uid });

  const AA = 'iam.v2.AccountAssociationsService';
  const assoc = await rpc(AA, 'CreateAccountAssociation', {
    parent: team.uid,
    account_association: { name: 'aws', amazon: { account: '123456789012' } },
  });
  assert.is(assoc.uid, team.uid, 'one association per group, under the group uid');
  assert.is((await rpc(AA, 'GetAccountAssociation', { uid: team.uid })).amazon.account, '123456789012');
  assert.is((await rpc(AA, 'ListAccountAssociations', { uidp: { ids: [team.uid] } })).account_associations.length, 1);
  await rpc(AA, 'UpdateAccountAssociation', {
    account_association: { uid: team.uid, google: { project_id: 'p', project_number: '1' } },
    update_mask: { paths: ['google'] },
  });
  await rpc(AA, 'DeleteAccountAssociation', { uid: team.uid });

  const Inv = 'iam.v2.GroupInvitesService';
  const invite = await rpc(Inv, 'CreateGroupInvite', {
    parent: team.uid,
    group_invite: { role_uid: viewer, ttl: { seconds: '3600' } },
  });
  assert.ok(invite.code, 'the code is shown once, at create');
  const expires = Number(invite.expiration_time.seconds) - Number(invite.create_time.seconds);
  assert.is(expires, 3600, 'the ttl Duration reached the pipeline');
  const got = await rpc(Inv, 'GetGroupInvite', { uid: invite.uid });
  assert.is(got.code, undefined);
  assert.equal(
    [got.role.uid, got.role.name, got.role.capabilities.includes('CAP_REPO_LIST')],
    [viewer, 'viewer', true],
    'the role shown whole (GroupInviteRole)',
  );
  assert.is(invite.role.uid, viewer, 'at create too');
  assert.is(
    (await rpc(Inv, 'ListGroupInvites', { uidp: { children_of: team.uid }, key_id: invite.key_id })).group_invites
      .length,
    1,
  );
  await rpc(Inv, 'DeleteGroupInvite', { uid: invite.uid });

  const Te = 'iam.v2.TermsService';
  const accepted = await rpc(Te, 'AcceptTerms', { group: org, document_ids: ['platform-terms-of-service-2025-01'] });
  assert.equal(accepted.document_ids, ['platform-terms-of-service-2025-01']);
  const terms = await rpc(Te, 'ListTermsAcceptances', { group: org });
  assert.is(terms.terms_acceptances[0].doc_id, 'platform-terms-of-service-2025-01');

  await rpc(P, 'DeleteIdentityProvider', { uid: idp.uid });
  await rpc('iam.v2.RoleBindingsService', 'DeleteRoleBinding', { uid: iam.binding });
  await rpc('iam.v2.RolesService', 'DeleteRole', { uid: iam.role });
  await rpc('iam.v2.IdentitiesService', 'DeleteIdentity', { uid: iam.robot });
  await rpc('iam.v2.GroupsService', 'DeleteGroup', { uid: team.uid });
  await rpc('iam.v2.GroupsService', 'GetGroup', { uid: team.uid }, grpc.status.NOT_FOUND);
});

test('events and ping', async () => {
  const E = 'events.v2.SubscriptionsService';
  const sub = await rpc(E, 'CreateSubscription', { parent: org, subscription: { sink: 'https://hooks.example/in' } });
  assert.is((await rpc(E, 'GetSubscription', { uid: sub.uid })).sink, 'https://hooks.example/in');
  assert.is((await rpc(E, 'ListSubscriptions', { uidp: { children_of: org } })).subscriptions.length, 1);
  // The subscription's own created event is on its way to the (unreachable) sink.
  const D = 'events.v2.DeliveriesService';
  let deliveries: { uid: string; event_type: string; state: string }[] = [];
  for (let i = 0; i < 100 && deliveries.length === 0; i++) {
    deliveries = (await rpc(D, 'ListDeliveries', { uidp: { children_of: sub.uid } })).deliveries ?? [];
    if (deliveries.length === 0) await new Promise((r) => setTimeout(r, 50));
  }
  assert.is(deliveries[0].event_type, 'dev.chainguard.api.events.subscription.created.v1');
  assert.is((await rpc(D, 'GetDelivery', { uid: deliveries[0].uid })).uid, deliveries[0].uid);
  assert.equal(await rpc(E, 'RedriveDeliveries', { uid: sub.uid }), { redriven: 0 });
  await rpc(E, 'DeleteSubscription', { uid: sub.uid });
  assert.equal(await rpc('ping.v2.PingService', 'Ping', {}), { response: 'pong' });
});

test('organizations found by email: the caller without a trusted email finds none (test/group-access has the rest)', async () => {
  const G = 'iam.v2.GroupsService';
  assert.equal(await rpc(G, 'CheckEligibility', {}), { eligible: false });
  await rpc(G, 'LookupGroup', {}, grpc.status.NOT_FOUND);
  await rpc(G, 'RequestGroupAccess', { group_uid: org }, grpc.status.NOT_FOUND);
  const me = await rpc('iam.v2.IdentitiesService', 'UpdateIdentityMetadata', {
    identity_metadata: { job_title: 'owner of everything' },
  });
  assert.is(me.uid, s.bootstrap.owner);
  assert.is(me.job_title, 'owner of everything');
});

test('the batch rpcs answer (test/batch has their rules)', async () => {
  const { roles } = await rpc('iam.v2.RolesService', 'ListRoles', { name: 'viewer' });
  const who = await rpc('iam.v2.IdentitiesService', 'CreateIdentity', { parent: org, identity: { name: 'batched' } });
  const made = await rpc('iam.v2.RoleBindingsService', 'BatchCreateRoleBindings', {
    parent: org,
    role_uid: roles[0].uid,
    requests: [{ role_binding: { identity_uid: who.uid } }],
  });
  assert.is(made.role_bindings[0].identity.uid, who.uid);
  const none = await rpc('iam.v2.ExternalGroupRoleMappingsService', 'BatchDeleteExternalGroupRoleMappings', {
    parent: `${org}/0123456789abcdef`,
    names: [`${org}/0123456789abcdef/0123456789abcdef`],
  });
  assert.equal(none.external_group_role_mappings ?? [], [], 'a mapping already gone is skipped');
});

test('every v2 rpc is served under its v2beta1 name too, by the same operation', async () => {
  const definitions = loadDefinitions();
  const beta = Object.keys(definitions).filter((k) => /^chainguard\.platform\.\w+\.v2beta1\.\w+Service$/.test(k));
  assert.is(beta.length, Object.keys(definitions).filter((k) => /\.v2\.\w+Service$/.test(k)).length);
  for (const k of beta) {
    const service = k.slice('chainguard.platform.'.length);
    for (const name of Object.keys(definitions[k] as object)) {
      // An empty request: every rpc answers it (mostly INVALID_ARGUMENT), none is UNIMPLEMENTED.
      const r = await c.call(service, name, {});
      assert.is.not(r.code, grpc.status.UNIMPLEMENTED, `${service}/${name}: ${r.message}`);
      if (!name.startsWith('List')) continue;
      const twin = await c.call(service.replace('.v2beta1.', '.v2.'), name, {});
      assert.equal([r.code, r.value], [twin.code, twin.value], `${service}/${name} answers as its v2 twin`);
    }
  }
});

test('every rpc of the generated protos was called above', () => {
  const definitions = loadDefinitions();
  const all = Object.keys(definitions)
    // v2beta1 is checked above; the token service (oidc) with a real upstream issuer in exchange.test.ts; v1's
    // packages (no version in their names) by a client of the reference's protos in grpc-v1-reference-client.test.ts.
    .filter(
      (k) =>
        /^chainguard\.platform\.\w+\.v\d/.test(k) &&
        k.endsWith('Service') &&
        !k.includes('.v2beta1.') &&
        !k.includes('.oidc.'),
    )
    .flatMap((k) => Object.keys(definitions[k] as object).map((m) => `${k.slice('chainguard.platform.'.length)}/${m}`));
  assert.ok(all.length >= 67, `${all.length} rpcs`);
  assert.equal(
    all.filter((r) => !called.has(r)),
    [],
  );
});

test('errors: the AIP-193 code, and the same typed details as HTTP in grpc-status-details-bin', async () => {
  const R = 'registry.v2.ReposService';
  const missing = await rpc(R, 'GetRepo', { uid: `${org}/0123456789abcdef` }, grpc.status.NOT_FOUND);
  assert.is(detail(missing, 'ErrorInfo')?.reason, 'NOT_FOUND');
  assert.is(detail(missing, 'ErrorInfo')?.domain, 'registry.platform.dev');
  assert.ok(detail(missing, 'ResourceInfo'), JSON.stringify(missing.details));
  const http = (await s.call('GET', `/registry/v2/repos/${org}/0123456789abcdef`)).body;
  assert.is(missing.message, http.message);
  assert.equal(missing.details, http.details);

  const bad = await rpc(R, 'CreateRepo', { parent: org, repo: { name: 'Not Valid!' } }, grpc.status.INVALID_ARGUMENT);
  assert.match(bad.message, /^Invalid argument: name: /);
  assert.is(detail(bad, 'BadRequest')?.fieldViolations[0].field, 'name');

  const noUid = await rpc(R, 'UpdateRepo', { repo: { description: 'x' } }, grpc.status.INVALID_ARGUMENT);
  assert.is(detail(noUid, 'BadRequest')?.fieldViolations[0].field, 'repo.uid');

  const stranger = await s.mint((await s.call('POST', `/iam/v2/identities/${org}`, { name: 'stranger' })).body.uid);
  const denied = await rpc(
    R,
    'CreateRepo',
    { parent: org, repo: { name: 'x' } },
    grpc.status.PERMISSION_DENIED,
    stranger,
  );
  assert.is(detail(denied, 'ErrorInfo')?.reason, 'PERMISSION_DENIED');
  const listed = await rpc(R, 'ListRepos', { uidp: { descendants_of: org } }, 0, stranger);
  assert.equal(listed.repos ?? [], [], 'a list shows a caller only what it may see');
});

test('tokens: a bad token is UNAUTHENTICATED on every rpc; none is UNAUTHENTICATED where a caller is needed', async () => {
  const R = 'registry.v2.ReposService';
  for (const token of ['garbage', `${s.token.slice(0, -2)}xx`]) {
    const r = await rpc(R, 'ListRepos', {}, grpc.status.UNAUTHENTICATED, token);
    assert.is(detail(r, 'ErrorInfo')?.reason, 'UNAUTHENTICATED');
  }
  await rpc('ping.v2.PingService', 'Ping', {}, grpc.status.UNAUTHENTICATED, 'garbage');
  await rpc(R, 'CreateRepo', { parent: org, repo: { name: 'anon' } }, grpc.status.UNAUTHENTICATED, '');
  await rpc(R, 'ListRepos', {}, grpc.status.UNAUTHENTICATED, `Basic ${s.token}`);
  await rpc(R, 'ListRepos', {}, 0, `Bearer ${s.token}`);
});

test('a malformed message is INVALID_ARGUMENT; an oversized one RESOURCE_EXHAUSTED; the server carries on', async () => {
  const client = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
  const raw = (path: string, bytes: Buffer) =>
    new Promise<grpc.ServiceError | null>((resolve) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${s.token}`);
      client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        bytes,
        metadata,
        (e) => resolve(e),
      );
    });
  const path = '/chainguard.platform.registry.v2.ReposService/CreateRepo';
  const garbage = await raw(path, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]));
  assert.is(garbage?.code, grpc.status.INVALID_ARGUMENT, garbage?.details);
  const huge = await raw(
    path,
    Buffer.concat([Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x01]), Buffer.alloc(2 * 1024 * 1024)]),
  );
  assert.is(huge?.code, grpc.status.RESOURCE_EXHAUSTED, huge?.details);
  const unknown = await raw('/chainguard.platform.registry.v2.ReposService/Nope', Buffer.alloc(0));
  assert.is(unknown?.code, grpc.status.UNIMPLEMENTED);
  client.close();
  await rpc('ping.v2.PingService', 'Ping', {});
  assert.is((await s.call('GET', '/ping/v2/ping')).status, 200, 'HTTP on the same port still answers');
});

test('a deadline the server cannot meet ends the call with DEADLINE_EXCEEDED', async () => {
  const r = await c.call('registry.v2.ReposService', 'ListRepos', {}, s.token, { deadline: Date.now() - 1 });
  assert.is(r.code, grpc.status.DEADLINE_EXCEEDED);
  await rpc('ping.v2.PingService', 'Ping', {});
});

test('server reflection (v1 and v1alpha) lists every service, so grpcurl list works', async () => {
  for (const version of ['v1', 'v1alpha']) {
    const file = `node_modules/@grpc/reflection/build/proto/grpc/reflection/${version}/reflection.proto`;
    const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true })) as any;
    const Reflection = loaded.grpc.reflection[version].ServerReflection;
    const client = new Reflection(new URL(s.url).host, grpc.credentials.createInsecure());
    const ask = (request: object) =>
      new Promise<any>((resolve, reject) => {
        const stream = client.ServerReflectionInfo();
        stream.on('data', resolve);
        stream.on('error', reject);
        stream.write(request);
        stream.end();
      });
    const names: string[] = (await ask({ list_services: '' })).list_services_response.service.map((x: any) => x.name);
    // describe: the file declaring a service, with the files it imports, as grpcurl describe reads them
    const files = (await ask({ file_containing_symbol: 'chainguard.platform.registry.v2.ReposService' }))
      .file_descriptor_response.file_descriptor_proto;
    client.close();
    const described = files.map((bytes: Buffer) => descriptor.FileDescriptorProto.decode(bytes) as any);
    const registry = described.find((f: any) => f.package === 'chainguard.platform.registry.v2');
    assert.ok(registry, version);
    assert.ok(registry.service.some((x: any) => x.name === 'ReposService'));
    assert.ok(registry.messageType.some((m: any) => m.name === 'Repo'));
    assert.ok(names.includes('chainguard.platform.registry.v2.ReposService'), names.join(' '));
    assert.ok(names.includes('chainguard.platform.iam.v2.RoleBindingsService'));
    // v1's services (spec v1Proto), as the reference's provider and SDK call them.
    for (const v1 of ['events.Subscriptions', 'registry.Registry', 'iam.Identities', 'iam.Groups', 'ping.PingService'])
      assert.ok(names.includes(`chainguard.platform.${v1}`), v1);
    assert.ok(names.filter((n) => n.startsWith('chainguard.platform.')).length >= 17, version);
  }
});

test('GRPC_PORT serves gRPC alone as well', async () => {
  const server = await startServer(
    readConfig({ PORT: '0', GRPC_PORT: '0', HOST: '127.0.0.1', DATA_DIR: `${s.dataDir}-grpc`, LOG: 'off' }),
  );
  try {
    assert.ok(server.grpcPort && server.grpcPort > 0);
    const client = grpcClient(`http://127.0.0.1:${server.grpcPort}`, '');
    const r = await client.call('ping.v2.PingService', 'Ping', {});
    client.close();
    assert.equal(r.value, { response: 'pong' });
  } finally {
    await server.close();
  }
});

test.run();
