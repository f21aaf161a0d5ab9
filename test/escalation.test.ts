// No escalation, for every way a write can make what someone may do grow, through v2 and v1 alike; and an
// identity made under a group reaches nothing outside it (spec section 4, rule 2).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;
let team: string;
let teamOwnerUid: string;
const builtIn: Record<string, string> = {};
let asTeamOwner: Record<string, string>;

function expectCode(r: Reply, status: number, code: number, what: string) {
  assert.is(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, code, what);
}
const ok = (r: Reply, what: string) => {
  assert.is(r.status, 200, `${what}: ${JSON.stringify(r.body)}`);
  return r.body;
};

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
  for (const r of (await s.call('GET', '/iam/v2/roles?page_size=200')).body.roles) builtIn[r.name] = r.uid;
  team = ok(await s.call('POST', `/iam/v2/groups/${org}`, { name: 'team' }), 'team').uid;
  teamOwnerUid = ok(await s.call('POST', `/iam/v2/identities/${team}`, { name: 'team owner' }), 'identity').uid;
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: teamOwnerUid, roleUid: builtIn.owner }),
    'bind',
  );
  asTeamOwner = { authorization: `Bearer ${await s.mint(teamOwnerUid)}` };
});
test.after(async () => s.stop());

const canCreateAdvisory = async () =>
  (
    await s.call(
      'POST',
      '/vulnerabilities/v1/advisories',
      { parentId: team, advisory: { id: 'CGA-test', aliases: [] } },
      asTeamOwner,
    )
  ).status !== 403;

test('a role bound to the caller cannot gain capabilities the caller lacks: v2 with and without a mask, v1', async () => {
  const role = ok(
    await s.call('POST', `/iam/v2/roles/${team}`, { name: 'mine', capabilities: ['CAP_REPO_LIST'] }, asTeamOwner),
    'create a role of held capabilities',
  );
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: teamOwnerUid, roleUid: role.uid }, asTeamOwner),
    'bind it to myself',
  );
  const widened = ['CAP_REPO_LIST', 'CAP_ADVISORIES_CREATE'];
  for (const mask of ['', '?updateMask=capabilities', '?update_mask=capabilities,description', '?updateMask=*']) {
    const r = await s.call(
      'PATCH',
      `/iam/v2/roles/${role.uid}${mask}`,
      { name: 'mine', capabilities: widened },
      asTeamOwner,
    );
    expectCode(r, 403, 7, `PATCH ${mask || 'without a mask'}`);
    assert.match(r.body.message, /CAP_ADVISORIES_CREATE/);
  }
  const v1 = await s.call(
    'PUT',
    `/iam/v1/roles/${role.uid}`,
    { name: 'mine', capabilities: ['repo.list', 'advisories.create'] },
    asTeamOwner,
  );
  expectCode(v1, 403, 7, 'v1 PUT');
  assert.equal(
    ok(await s.call('GET', `/iam/v2/roles/${role.uid}`), 'get').capabilities,
    ['CAP_REPO_LIST'],
    'the role is unchanged',
  );
  assert.not.ok(await canCreateAdvisory(), 'the caller gained nothing');
  // Capabilities the caller does hold may be added, and removing is never growth.
  ok(
    await s.call(
      'PATCH',
      `/iam/v2/roles/${role.uid}?updateMask=capabilities`,
      { capabilities: ['CAP_REPO_LIST', 'CAP_REPO_CREATE'] },
      asTeamOwner,
    ),
    'add a held capability',
  );
  ok(
    await s.call('PATCH', `/iam/v2/roles/${role.uid}`, { capabilities: ['CAP_REPO_LIST'] }, asTeamOwner),
    'remove one',
  );
});

test('a role cannot be created with capabilities the caller lacks: v2 and v1', async () => {
  expectCode(
    await s.call(
      'POST',
      `/iam/v2/roles/${team}`,
      { name: 'wide', capabilities: ['CAP_ADVISORIES_CREATE'] },
      asTeamOwner,
    ),
    403,
    7,
    'v2 create',
  );
  expectCode(
    await s.call('POST', `/iam/v1/roles/${team}`, { name: 'wide', capabilities: ['advisories.create'] }, asTeamOwner),
    403,
    7,
    'v1 create',
  );
  const listed = ok(await s.call('GET', `/iam/v2/roles?uidp.children_of=${team}&name=wide`), 'list');
  assert.is(listed.roles.length, 0, 'nothing was stored');
});

test('a role granted in groups where the caller lacks a capability cannot gain it there', async () => {
  // The org owner's role, in the org, granted in the org: the team owner may not even update it.
  const orgRole = ok(
    await s.call('POST', `/iam/v2/roles/${org}`, { name: 'org role', capabilities: ['CAP_REPO_LIST'] }),
    'org role',
  );
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: s.bootstrap.owner, roleUid: orgRole.uid }),
    'bound in the org',
  );
  expectCode(
    await s.call(
      'PATCH',
      `/iam/v2/roles/${orgRole.uid}`,
      { capabilities: ['CAP_REPO_LIST', 'CAP_REPO_CREATE'] },
      asTeamOwner,
    ),
    403,
    7,
    'update above',
  );
  // Roles need a group: a root custom role, editable from anywhere and bound everywhere, cannot be made.
  const root = await s.call('POST', '/iam/v2/roles', { name: 'everywhere', capabilities: ['CAP_REPO_LIST'] });
  assert.ok(
    root.status === 404 || root.status === 405 || root.status === 400,
    `root role: ${root.status} ${JSON.stringify(root.body)}`,
  );
});

test('bindings: a stronger role cannot be bound, nor an existing binding switched to one (v2, masks, v1)', async () => {
  expectCode(
    await s.call(
      'POST',
      `/iam/v2/roleBindings/${team}`,
      { identityUid: teamOwnerUid, roleUid: builtIn['advisories.author'] },
      asTeamOwner,
    ),
    403,
    7,
    'v2 bind',
  );
  expectCode(
    await s.call(
      'POST',
      `/iam/v1/rolebindings/${team}`,
      { identity: teamOwnerUid, role: builtIn['advisories.author'] },
      asTeamOwner,
    ),
    403,
    7,
    'v1 bind',
  );
  const weak = ok(
    await s.call(
      'POST',
      `/iam/v2/roleBindings/${team}`,
      { identityUid: teamOwnerUid, roleUid: builtIn.viewer },
      asTeamOwner,
    ),
    'bind viewer',
  );
  for (const mask of ['', '?updateMask=roleUid', '?updateMask=*']) {
    expectCode(
      await s.call(
        'PATCH',
        `/iam/v2/roleBindings/${weak.uid}${mask}`,
        { identityUid: teamOwnerUid, roleUid: builtIn['advisories.author'] },
        asTeamOwner,
      ),
      403,
      7,
      `switch ${mask}`,
    );
  }
  expectCode(
    await s.call(
      'PUT',
      `/iam/v1/rolebindings/${weak.uid}`,
      { identity: teamOwnerUid, role: builtIn['advisories.author'] },
      asTeamOwner,
    ),
    403,
    7,
    'v1 switch',
  );
  assert.is(ok(await s.call('GET', `/iam/v2/roleBindings/${weak.uid}`), 'get').roleUid, builtIn.viewer);
  assert.not.ok(await canCreateAdvisory());
});

test('invites, identity providers and group-role mappings cannot grant a stronger role, nor grant above the caller', async () => {
  const author = builtIn['advisories.author'];
  expectCode(
    await s.call('POST', `/iam/v2/groupInvites/${team}`, { roleUid: author, ttl: '3600s' }, asTeamOwner),
    403,
    7,
    'v2 invite',
  );
  expectCode(
    await s.call('POST', `/iam/v1/group_invites/${team}`, { role: author, ttl: '3600s' }, asTeamOwner),
    403,
    7,
    'v1 invite',
  );
  const oidc = { issuer: 'https://idp.example', clientId: 'c' };
  expectCode(
    await s.call('POST', `/iam/v2/identityProviders/${team}`, { name: 'idp', defaultRole: author, oidc }, asTeamOwner),
    403,
    7,
    'provider create',
  );
  const idp = ok(
    await s.call(
      'POST',
      `/iam/v2/identityProviders/${team}`,
      { name: 'idp', defaultRole: builtIn.viewer, oidc },
      asTeamOwner,
    ),
    'provider',
  );
  expectCode(
    await s.call('PATCH', `/iam/v2/identityProviders/${idp.uid}`, { defaultRole: author }, asTeamOwner),
    403,
    7,
    'provider update',
  );
  expectCode(
    await s.call(
      'PATCH',
      `/iam/v2/identityProviders/${idp.uid}?updateMask=defaultRole`,
      { defaultRole: author, name: 'x' },
      asTeamOwner,
    ),
    403,
    7,
    'provider update, masked',
  );
  expectCode(
    await s.call(
      'POST',
      `/iam/v2/externalGroupRoleMappings/${idp.uid}`,
      { externalGroupId: 'g', roleUid: author },
      asTeamOwner,
    ),
    403,
    7,
    'mapping role',
  );
  // A mapping's scope is where its role applies: not above the provider's group, where the caller holds nothing.
  const above = await s.call(
    'POST',
    `/iam/v2/externalGroupRoleMappings/${idp.uid}`,
    { externalGroupId: 'g', roleUid: builtIn.viewer, scope: org },
    asTeamOwner,
  );
  expectCode(above, 400, 3, 'mapping scope above the provider');
  ok(
    await s.call(
      'POST',
      `/iam/v2/externalGroupRoleMappings/${idp.uid}`,
      { externalGroupId: 'g', roleUid: builtIn.viewer, scope: team },
      asTeamOwner,
    ),
    'mapping in the team',
  );
});

test('who may act as an identity changes only by a caller who holds what the identity is granted (v2, v1)', async () => {
  const robot = ok(await s.call('POST', `/iam/v2/identities/${team}`, { name: 'robot' }), 'robot').uid;
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: robot, roleUid: builtIn['advisories.author'] }),
    'bound by the org owner',
  );
  const mine = { issuer: 'https://issuer.attacker.example', subject: 'me' };
  expectCode(
    await s.call('PATCH', `/iam/v2/identities/${robot}`, { claimMatch: mine }, asTeamOwner),
    403,
    7,
    'v2 claimMatch',
  );
  expectCode(
    await s.call(
      'PATCH',
      `/iam/v2/identities/${robot}?updateMask=staticKeys`,
      { staticKeys: { issuer: 'i', subject: 's', issuerKeys: '{}' } },
      asTeamOwner,
    ),
    403,
    7,
    'v2 staticKeys',
  );
  expectCode(
    await s.call('PUT', `/iam/v1/identities/${robot}`, { name: 'robot', claimMatch: mine }, asTeamOwner),
    403,
    7,
    'v1 claimMatch',
  );
  assert.is(ok(await s.call('GET', `/iam/v2/identities/${robot}`), 'get').claimMatch, undefined, 'unchanged');
  ok(
    await s.call('PATCH', `/iam/v2/identities/${robot}`, { description: 'still mine to describe' }, asTeamOwner),
    'other fields',
  );
  ok(
    await s.call('PATCH', `/iam/v2/identities/${robot}`, { claimMatch: mine }),
    'the org owner holds all it is granted',
  );
});

test('an identity confined to a group makes nothing at the root: no organization, no unconfined identity (v2, v1)', async () => {
  for (const [path, body] of [
    ['/iam/v2/identities', { name: 'escape' }],
    ['/iam/v1/identities', { name: 'escape' }],
    ['/iam/v2/groups', { name: 'escape' }],
    ['/iam/v1/groups', { name: 'escape' }],
  ] as const) {
    const r = await s.call('POST', path, body, asTeamOwner);
    expectCode(r, 400, 9, path);
    assert.match(r.body.message, /confined/);
  }
  assert.is(ok(await s.call('GET', '/iam/v2/identities?uidp.in_root=true&name=escape'), 'list').identities.length, 0);
});

test("a mapping scope is an existing group within the provider's group, never a path that leaves it", async () => {
  const idp = ok(
    await s.call(
      'POST',
      `/iam/v2/identityProviders/${team}`,
      { name: 'idp2', defaultRole: builtIn.viewer, oidc: { issuer: 'https://idp.example', clientId: 'c' } },
      asTeamOwner,
    ),
    'provider',
  );
  const sibling = ok(await s.call('POST', `/iam/v2/groups/${org}`, { name: 'beside' }), 'sibling').uid;
  for (const scope of [
    `${team}/../${sibling.split('/').pop()}`,
    `${team}/..`,
    `${team}/zzzz`,
    '',
    `${team}/0000000000000000`,
  ]) {
    const r = await s.call(
      'POST',
      `/iam/v2/externalGroupRoleMappings/${idp.uid}`,
      { externalGroupId: 'g', roleUid: builtIn.viewer, scope },
      asTeamOwner,
    );
    expectCode(r, 400, 3, `scope ${JSON.stringify(scope)}`);
  }
});

test('binding refusals say nothing of whether a record exists in a group the caller cannot see', async () => {
  const sibling = ok(await s.call('POST', `/iam/v2/groups/${org}`, { name: 'hidden' }), 'sibling').uid;
  const real = ok(await s.call('POST', `/iam/v2/identities/${sibling}`, { name: 'hidden' }), 'identity').uid;
  const made = `${sibling}/${'f'.repeat(16)}`;
  const [a, b] = [
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: real, roleUid: builtIn.viewer }, asTeamOwner),
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: made, roleUid: builtIn.viewer }, asTeamOwner),
  ];
  assert.is(a.status, b.status);
  assert.is(
    a.body.message.replace(real, 'X'),
    b.body.message.replace(made, 'X'),
    'the same answer for a real and a made-up uid',
  );
});

test('an identity made under a group cannot be bound above or beside it, through v2 or v1', async () => {
  const sibling = ok(await s.call('POST', `/iam/v2/groups/${org}`, { name: 'sibling' }), 'sibling').uid;
  for (const group of [org, sibling]) {
    const v2 = await s.call('POST', `/iam/v2/roleBindings/${group}`, {
      identityUid: teamOwnerUid,
      roleUid: builtIn.viewer,
    });
    expectCode(v2, 400, 3, `v2 bind in ${group === org ? 'the org' : 'a sibling'}`);
    assert.match(v2.body.message, /identityUid/);
    expectCode(
      await s.call('POST', `/iam/v1/rolebindings/${group}`, { identity: teamOwnerUid, role: builtIn.viewer }),
      400,
      3,
      'v1 bind',
    );
  }
  // A role of the team cannot be bound in the org either.
  const teamRole = ok(
    await s.call('POST', `/iam/v2/roles/${team}`, { name: 'team role', capabilities: ['CAP_REPO_LIST'] }),
    'team role',
  );
  const orgIdentity = ok(await s.call('POST', `/iam/v2/identities/${org}`, { name: 'org member' }), 'org identity').uid;
  expectCode(
    await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: orgIdentity, roleUid: teamRole.uid }),
    400,
    3,
    'a team role in the org',
  );
});

test('a binding that reaches above a confined identity (an accepted invite) grants nothing outside its group', async () => {
  const repoInOrg = ok(await s.call('POST', `/registry/v2/repos/${org}`, { name: 'org-repo' }), 'org repo').uid;
  const repoInTeam = ok(await s.call('POST', `/registry/v2/repos/${team}`, { name: 'team-repo' }), 'team repo').uid;
  const member = ok(await s.call('POST', `/iam/v2/identities/${team}`, { name: 'member' }), 'member').uid;
  const asMember = { authorization: `Bearer ${await s.mint(member)}` };
  const invite = ok(
    await s.call('POST', `/iam/v2/groupInvites/${org}`, { roleUid: builtIn.viewer, ttl: '3600s' }),
    'org invite',
  );
  ok(await s.call('POST', '/iam/v2/groupInvites:accept', { code: invite.code }, asMember), 'accepted');
  expectCode(await s.call('GET', `/registry/v2/repos/${repoInOrg}`, undefined, asMember), 403, 7, 'the org repo');
  ok(await s.call('GET', `/registry/v2/repos/${repoInTeam}`, undefined, asMember), 'the team repo');
  const listed = ok(await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${org}`, undefined, asMember), 'list');
  assert.equal(
    listed.repos.map((r: any) => r.uid),
    [repoInTeam],
    'only what is inside its group',
  );
  const v1 = ok(await s.call('GET', '/registry/v1/repos', undefined, asMember), 'v1 list');
  assert.equal(
    v1.items.map((r: any) => r.id),
    [repoInTeam],
    'v1 too',
  );
});

/**
 * A tenant as the issue describes one: a root identity holding registry.push somewhere, which lets it found an
 * organization of its own (it owns it). Answers its token and its organization.
 */
async function tenant(
  name: string,
): Promise<{ uid: string; headers: Record<string, string>; token: string; org: string }> {
  const uid = ok(await s.call('POST', '/iam/v2/identities', { name }), 'tenant identity').uid;
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: uid, roleUid: builtIn['registry.push'] }),
    'push',
  );
  const token = await s.mint(uid);
  const headers = { authorization: `Bearer ${token}` };
  const own = ok(await s.call('POST', '/iam/v2/groups', { name: `${name} org` }, headers), 'own organization').uid;
  return { uid, headers, token, org: own };
}

test("a tenant cannot bind another's root identity, nor read it: refused as an unknown uid (v2, v1, gRPC)", async () => {
  const foreign = ok(
    await s.call('POST', '/iam/v2/identities', {
      name: 'foreign person',
      description: 'secret description',
      claimMatch: { issuer: 'https://foreign-issuer.example', subject: 'foreign-subject' },
    }),
    'a root identity of the bootstrap organization',
  ).uid;
  ok(await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: foreign, roleUid: builtIn.viewer }), 'bound');
  const t = await tenant('tenant a');
  const unknown = 'f'.repeat(40);
  const answers: unknown[] = [];
  for (const target of [foreign, s.bootstrap.owner]) {
    const bind = (identityUid: string) =>
      s.call('POST', `/iam/v2/roleBindings/${t.org}`, { identityUid, roleUid: builtIn.viewer }, t.headers);
    const [real, made] = [await bind(target), await bind(unknown)];
    expectCode(real, 400, 3, 'v2 bind of a foreign root identity');
    assert.equal(
      JSON.parse(JSON.stringify(real.body).replaceAll(target, 'X')),
      JSON.parse(JSON.stringify(made.body).replaceAll(unknown, 'X')),
      'the answer for an unknown uid',
    );
    const v1 = (identity: string) =>
      s.call('POST', `/iam/v1/rolebindings/${t.org}`, { identity, role: builtIn.viewer }, t.headers);
    const [v1Real, v1Made] = [await v1(target), await v1(unknown)];
    expectCode(v1Real, 400, 3, 'v1 bind');
    assert.is(
      JSON.stringify(v1Real.body).replaceAll(target, 'X'),
      JSON.stringify(v1Made.body).replaceAll(unknown, 'X'),
    );
    const [getReal, getMade] = [
      await s.call('GET', `/iam/v2/identities/${target}`, undefined, t.headers),
      await s.call('GET', `/iam/v2/identities/${unknown}`, undefined, t.headers),
    ];
    expectCode(getReal, 403, 7, 'reading it');
    assert.is(getReal.body.message.replace(target, 'X'), getMade.body.message.replace(unknown, 'X'));
    answers.push(real.body, v1Real.body, getReal.body);
  }
  const grpc = grpcClient(s.url, t.token);
  try {
    const r = await grpc.call('iam.v2.RoleBindingsService', 'CreateRoleBinding', {
      parent: t.org,
      role_binding: { identity_uid: foreign, role_uid: builtIn.viewer },
    });
    assert.is(r.code, 3, 'gRPC: INVALID_ARGUMENT');
    answers.push(r.message, r.details);
  } finally {
    grpc.close();
  }
  answers.push((await s.call('GET', `/iam/v2/roleBindings?uidp.descendants_of=${t.org}`, undefined, t.headers)).body);
  // Looking up an identity of another tenant's group by its issuer and subject finds nothing; a root one, its uid.
  const robot = ok(
    await s.call('POST', `/iam/v2/identities/${team}`, {
      name: 'robot',
      claimMatch: { issuer: 'https://ci.example', subject: 'repo:team/app' },
    }),
    'a robot of the team',
  ).uid;
  const lookup = (issuer: string, subject: string, headers?: Record<string, string>) =>
    s.call('GET', `/iam/v2/identities:lookupIdentity?issuer=${issuer}&subject=${subject}`, undefined, headers);
  assert.equal(ok(await lookup('https://ci.example', 'repo:team/app'), 'its owner finds it'), { uid: robot });
  const hidden = await lookup('https://ci.example', 'repo:team/app', t.headers);
  const none = await lookup('https://ci.example', 'repo:nobody', t.headers);
  expectCode(hidden, 404, 5, 'another tenant looks it up');
  assert.is(hidden.body.message.replace('repo:team/app', 'X'), none.body.message.replace('repo:nobody', 'X'));
  answers.push(hidden.body);
  const person = await lookup('https://foreign-issuer.example', 'foreign-subject', t.headers);
  assert.equal(ok(person, 'a root identity: the uid a person has, as the reference answers'), { uid: foreign });
  // A tenant that makes a root identity with the same issuer and subject does not take over the lookup (it would
  // answer the lower uid, the tenant's half the time): two matches are one refusal that names neither.
  const twin = await s.call(
    'POST',
    '/iam/v2/identities',
    { name: 'twin', claimMatch: { issuer: 'https://foreign-issuer.example', subject: 'foreign-subject' } },
    t.headers,
  );
  const twinUid = ok(twin, 'a twin made by the tenant').uid;
  for (const headers of [undefined, t.headers]) {
    const ambiguous = await lookup('https://foreign-issuer.example', 'foreign-subject', headers);
    expectCode(ambiguous, 400, 9, 'two identities match');
    assert.not.ok(JSON.stringify(ambiguous.body).includes(twinUid) || JSON.stringify(ambiguous.body).includes(foreign));
  }
  ok(await s.call('DELETE', `/iam/v2/identities/${twinUid}`, undefined, t.headers), 'the tenant deletes its twin');
  const seen = JSON.stringify(answers);
  for (const secret of ['foreign person', 'secret description', 'foreign-issuer', 'foreign-subject'])
    assert.not.ok(seen.includes(secret), `nothing of the foreign identity is told: ${secret}`);
  // Its own members (an identity it made, itself) it binds and reads.
  const mine = ok(await s.call('POST', '/iam/v2/identities', { name: 'my robot' }, t.headers), 'its own').uid;
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${t.org}`, { identityUid: mine, roleUid: builtIn.viewer }, t.headers),
    'bind its own',
  );
  ok(await s.call('GET', `/iam/v2/identities/${mine}`, undefined, t.headers), 'read its own');
  ok(await s.call('GET', `/iam/v2/identities/${t.uid}`, undefined, t.headers), 'read itself');
  // The owner of the organization where the foreign identity is bound may bind it below.
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: foreign, roleUid: builtIn.viewer }),
    'bound below',
  );
});

test('root identities are managed where they are bound: updated by who holds the capability in every such group, never by another tenant', async () => {
  // The bootstrap owner changes its own description (it holds CAP_IAM_IDENTITY_UPDATE where it is bound).
  const me = s.bootstrap.owner;
  const renamed = ok(
    await s.call('PATCH', `/iam/v2/identities/${me}`, { description: 'the first owner' }),
    'own update',
  );
  assert.is(renamed.description, 'the first owner');
  assert.is(ok(await s.call('GET', `/iam/v2/identities/${me}`), 'read').description, 'the first owner');
  const a = await tenant('tenant b');
  const b = await tenant('tenant c');
  // A member of both tenants' organizations: neither renames it alone; each reads it.
  const shared = ok(await s.call('POST', '/iam/v2/identities', { name: 'shared' }, a.headers), 'shared').uid;
  ok(
    await s.call('POST', `/iam/v2/roleBindings/${a.org}`, { identityUid: shared, roleUid: builtIn.viewer }, a.headers),
    'in a',
  );
  // It joins b's organization by b's invite, which it accepts itself.
  const invite = ok(
    await s.call('POST', `/iam/v2/groupInvites/${b.org}`, { roleUid: builtIn.viewer, ttl: '600s' }, b.headers),
    'invite',
  );
  const asShared = { authorization: `Bearer ${await s.mint(shared)}` };
  ok(await s.call('POST', '/iam/v2/groupInvites:accept', { code: invite.code }, asShared), 'accepted');
  ok(await s.call('GET', `/iam/v2/identities/${shared}`, undefined, b.headers), 'b reads its member');
  for (const t of [a, b]) {
    expectCode(
      await s.call('PATCH', `/iam/v2/identities/${shared}`, { description: 'mine' }, t.headers),
      403,
      7,
      'rename a shared member',
    );
    expectCode(
      await s.call('DELETE', `/iam/v2/identities/${shared}`, undefined, t.headers),
      403,
      7,
      'delete a shared member',
    );
  }
  expectCode(
    await s.call('PATCH', `/iam/v2/identities/${me}`, { description: 'taken' }, a.headers),
    403,
    7,
    'another tenant',
  );
  expectCode(
    await s.call('DELETE', `/iam/v2/identities/${me}`, undefined, a.headers),
    403,
    7,
    'another tenant deletes',
  );
  expectCode(await s.call('PUT', `/iam/v1/identities/${me}`, { name: 'taken' }, a.headers), 403, 7, 'v1 update');
  // Only in a's organization now: a manages it, within the no-escalation rules (who may act as it: a holds viewer in a).
  const bBinding = (
    await s.call('GET', `/iam/v2/roleBindings?uidp.children_of=${b.org}`, undefined, b.headers)
  ).body.roleBindings.find((x: any) => x.identityUid === shared);
  ok(await s.call('DELETE', `/iam/v2/roleBindings/${bBinding.uid}`, undefined, b.headers), 'b lets it go');
  const updated = ok(
    await s.call(
      'PATCH',
      `/iam/v2/identities/${shared}`,
      { description: 'ours', claimMatch: { issuer: 'https://a.example', subject: 'x' } },
      a.headers,
    ),
    'a updates',
  );
  assert.is(updated.description, 'ours');
  // Deleting needs it bound nowhere: its creator (or itself) then may; the last owner binding of an
  // organization therefore always outlives its identity.
  expectCode(await s.call('DELETE', `/iam/v2/identities/${shared}`, undefined, a.headers), 400, 9, 'still bound');
  expectCode(await s.call('DELETE', `/iam/v2/identities/${me}`), 400, 9, 'the last owner of the organization');
  const aBinding = (
    await s.call('GET', `/iam/v2/roleBindings?uidp.children_of=${a.org}`, undefined, a.headers)
  ).body.roleBindings.find((x: any) => x.identityUid === shared);
  ok(await s.call('DELETE', `/iam/v2/roleBindings/${aBinding.uid}`, undefined, a.headers), 'a lets it go');
  expectCode(await s.call('DELETE', `/iam/v2/identities/${shared}`, undefined, b.headers), 403, 7, 'not its creator');
  ok(await s.call('DELETE', `/iam/v2/identities/${shared}`, undefined, a.headers), 'its creator deletes it');
  expectCode(
    await s.call('GET', `/iam/v2/identities/${shared}`, undefined, a.headers),
    403,
    7,
    'gone: refused as any unknown uid',
  );
});

test.run();
