// Batches declared in the spec (runtime Operations.batchCreate and batchDelete):
// - POST /iam/v2/roleBindings:batchCreate: up to 25 creates under one parent in one transaction, all or none,
//   each checked as a create is (capability, references, no escalation), a shared roleUid, answers in request
//   order and hydrated as single creates are;
// - POST /iam/v2/externalGroupRoleMappings:batchDelete: mappings of one provider by uid, a gone one skipped, one
//   of another provider refused, each delete's event recorded.
// Both over HTTP and gRPC (BatchCreateRoleBindings, BatchDeleteExternalGroupRoleMappings), one pipeline.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { grpcClient, type GrpcTestClient } from './support/grpc-client.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let grpc: GrpcTestClient;
let org: string;
let team: string;
const roles: Record<string, string> = {};
const people: string[] = [];
const batch = '/iam/v2/roleBindings:batchCreate';

const ok = (r: Reply, what: string) => {
  assert.is(r.status, 200, `${what}: ${JSON.stringify(r.body)}`);
  return r.body;
};
const bindingsIn = async (group: string) =>
  (await s.call('GET', `/iam/v2/roleBindings?uidp.children_of=${group}&page_size=200`)).body.roleBindings as {
    identity: { uid: string };
    role: { uid: string };
  }[];

test.before(async () => {
  s = await startTestServer();
  grpc = grpcClient(s.url, s.token);
  org = s.bootstrap.organization;
  for (const r of (await s.call('GET', '/iam/v2/roles?page_size=200')).body.roles) roles[r.name] = r.uid;
  team = ok(await s.call('POST', `/iam/v2/groups/${org}`, { name: 'team' }), 'team').uid;
  for (const name of ['ann', 'bob', 'cat'])
    people.push(ok(await s.call('POST', `/iam/v2/identities/${org}`, { name }), name).uid);
});
test.after(async () => {
  grpc.close();
  await s.stop();
});

test('every binding made at once, in request order, hydrated, with a shared roleUid', async () => {
  const r = ok(
    await s.call('POST', batch, {
      parent: team,
      roleUid: roles.viewer,
      requests: [
        { roleBinding: { identityUid: people[2] } },
        { parent: team, roleBinding: { identityUid: people[0] } },
        { roleBinding: { identityUid: people[1], roleUid: roles.viewer } },
      ],
    }),
    'batch',
  );
  assert.equal(
    r.roleBindings.map((b: any) => [b.identity.uid, b.role.uid, b.group.uid]),
    [people[2], people[0], people[1]].map((p) => [p, roles.viewer, team]),
  );
  assert.is((await bindingsIn(team)).length, 3);
  for (const b of r.roleBindings) await s.call('DELETE', `/iam/v2/roleBindings/${b.uid}`);
});

test('all or none: one refused request leaves nothing made', async () => {
  const missing = `${org}/0123456789abcdef`;
  const r = await s.call('POST', batch, {
    parent: team,
    roleUid: roles.viewer,
    requests: [{ roleBinding: { identityUid: people[0] } }, { roleBinding: { identityUid: missing } }],
  });
  assert.ok(r.status >= 400 && r.status < 500, JSON.stringify(r.body));
  assert.equal(await bindingsIn(team), [], 'the first binding was not kept');
});

test('malformed batches are INVALID_ARGUMENT naming the field', async () => {
  const cases: [object, string][] = [
    [{ requests: [{ roleBinding: { identityUid: people[0], roleUid: roles.viewer } }] }, 'parent'],
    [{ parent: team, requests: [] }, 'requests'],
    [
      {
        parent: team,
        requests: Array.from({ length: 26 }, () => ({
          roleBinding: { identityUid: people[0], roleUid: roles.viewer },
        })),
      },
      'requests',
    ],
    [
      {
        parent: team,
        roleUid: roles.viewer,
        requests: [
          { roleBinding: { identityUid: people[0] } },
          { roleBinding: { identityUid: people[1], roleUid: roles.owner } },
        ],
      },
      'requests[1].roleBinding.roleUid',
    ],
    [
      { parent: team, requests: [{ parent: org, roleBinding: { identityUid: people[0], roleUid: roles.viewer } }] },
      'requests[0].parent',
    ],
    [{ parent: team, requests: [{ roleBinding: { identityUid: people[0] } }] }, 'requests[0].roleBinding.roleUid'],
    [{ parent: team, requests: [{ identityUid: people[0] }] }, 'requests[0].roleBinding'],
    [
      { parent: team, colour: 'red', requests: [{ roleBinding: { identityUid: people[0], roleUid: roles.viewer } }] },
      'colour',
    ],
  ];
  for (const [body, field] of cases) {
    const r = await s.call('POST', batch, body);
    assert.is(r.status, 400, `${field}: ${JSON.stringify(r.body)}`);
    const bad = r.body.details.find((d: any) => d['@type'].endsWith('BadRequest'));
    assert.is(bad?.fieldViolations?.[0]?.field, field, JSON.stringify(r.body));
  }
  assert.equal(await bindingsIn(team), []);
});

test('no escalation: a caller cannot bind through a batch a role it could not bind alone, and nothing is made', async () => {
  const lead = people[0];
  ok(await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: lead, roleUid: roles.owner }), 'lead');
  const asLead = { authorization: `Bearer ${await s.mint(lead)}` };
  const r = await s.call(
    'POST',
    batch,
    {
      parent: team,
      requests: [
        { roleBinding: { identityUid: people[1], roleUid: roles.viewer } },
        { roleBinding: { identityUid: people[2], roleUid: roles['advisories.author'] } },
      ],
    },
    asLead,
  );
  assert.is(r.status, 403, JSON.stringify(r.body));
  assert.equal(
    (await bindingsIn(team)).map((b) => b.identity.uid),
    [lead],
    'the viewer binding was not kept',
  );
  const outside = await s.call(
    'POST',
    batch,
    { parent: org, requests: [{ roleBinding: { identityUid: people[1], roleUid: roles.viewer } }] },
    asLead,
  );
  assert.is(outside.status, 403, 'no create capability in the organization');
});

test("batchDelete: the named mappings of one provider go, a gone one is skipped, another provider's is refused", async () => {
  const oidc = { issuer: 'https://idp.example', clientId: 'platform', clientSecret: 's3cret' };
  const provider = async (name: string) =>
    ok(await s.call('POST', `/iam/v2/identityProviders/${org}`, { name, defaultRole: roles.viewer, oidc }), name).uid;
  const [corp, other] = [await provider('corp'), await provider('other')];
  const map = async (idp: string, group: string) =>
    ok(
      await s.call('POST', `/iam/v2/externalGroupRoleMappings/${idp}`, {
        externalGroupId: group,
        roleUid: roles.viewer,
      }),
      group,
    ).uid;
  const mine = [await map(corp, 'a'), await map(corp, 'b'), await map(corp, 'c')];
  const theirs = await map(other, 'd');
  const listed = async (idp: string) =>
    (
      await s.call('GET', `/iam/v2/externalGroupRoleMappings?identityProviderUid=${idp}`)
    ).body.externalGroupRoleMappings.map((m: { uid: string }) => m.uid);
  const refused = await s.call('POST', '/iam/v2/externalGroupRoleMappings:batchDelete', {
    parent: corp,
    names: [mine[0], theirs],
  });
  assert.is(refused.status, 400, JSON.stringify(refused.body));
  assert.match(refused.body.message, /names\[1\]/);
  assert.is((await listed(corp)).length, 3, 'nothing deleted');
  const gone = `${corp}/0123456789abcdef`;
  const r = ok(
    await s.call('POST', '/iam/v2/externalGroupRoleMappings:batchDelete', {
      parent: corp,
      names: [mine[0], gone, mine[2]],
    }),
    'batchDelete',
  );
  assert.equal(r.parent, corp);
  assert.equal(
    r.externalGroupRoleMappings.map((m: { uid: string; externalGroupId: string }) => [m.uid, m.externalGroupId]),
    [
      [mine[0], 'a'],
      [mine[2], 'c'],
    ],
  );
  assert.equal(await listed(corp), [mine[1]]);
  assert.equal(await listed(other), [theirs]);
  const asStranger = { authorization: `Bearer ${await s.mint(people[2])}` };
  const denied = await s.call(
    'POST',
    '/iam/v2/externalGroupRoleMappings:batchDelete',
    { parent: corp, names: [mine[1]] },
    asStranger,
  );
  assert.is(denied.status, 403, JSON.stringify(denied.body));
  assert.equal(await listed(corp), [mine[1]]);
  const overGrpc = await grpc.call('iam.v2.ExternalGroupRoleMappingsService', 'BatchDeleteExternalGroupRoleMappings', {
    parent: corp,
    names: [mine[1]],
  });
  assert.is(overGrpc.code, 0, overGrpc.message);
  assert.is(overGrpc.value.parent, corp);
  assert.equal(
    overGrpc.value.external_group_role_mappings.map((m: { uid: string }) => m.uid),
    [mine[1]],
  );
  assert.equal(await listed(corp), []);
});

test('over gRPC, the same batch: all or none, hydrated, the escalation refused', async () => {
  const service = 'iam.v2.RoleBindingsService';
  const made = await grpc.call(service, 'BatchCreateRoleBindings', {
    parent: team,
    role_uid: roles.viewer,
    requests: [{ role_binding: { identity_uid: people[0] } }, { role_binding: { identity_uid: people[1] } }],
  });
  assert.is(made.code, 0, made.message);
  assert.equal(
    made.value.role_bindings.map((b: any) => [b.identity.uid, b.role.uid]),
    [people[0], people[1]].map((p) => [p, roles.viewer]),
  );
  // people[0] owns the team (the test above): advisories.author holds what an owner does not.
  const lead = await s.mint(people[0]);
  const before = (await bindingsIn(team)).length;
  const escalating = await grpc.call(
    service,
    'BatchCreateRoleBindings',
    {
      parent: team,
      requests: [{ role_binding: { identity_uid: people[2], role_uid: roles['advisories.author'] } }],
    },
    lead,
  );
  assert.is(escalating.code, 7, 'PERMISSION_DENIED');
  const malformed = await grpc.call(service, 'BatchCreateRoleBindings', { parent: team, requests: [] });
  assert.is(malformed.code, 3, 'INVALID_ARGUMENT');
  assert.is((await bindingsIn(team)).length, before, 'nothing made by the refused batches');
  for (const b of made.value.role_bindings) await s.call('DELETE', `/iam/v2/roleBindings/${b.uid}`);
});

test.run();
