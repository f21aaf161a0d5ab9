// No escalation, for every way a write can make what someone may do grow, through v2 and v1 alike; and an
// identity made under a group reaches nothing outside it (spec section 4, rule 2).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
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

test.run();
