// What the reference's Terraform provider sends, accepted as it sends it (issue 27, item 4), over v2 and v2beta1
// gRPC and HTTP: a group update whose mask names `verified` unchanged, a `*` update carrying output-only and
// hydrated fields, NOT_FOUND for deleting what is gone, and RESOURCE_EXHAUSTED only for calls that did nothing (the
// provider retries every call on it, creates included, so a refused create retried must not make two).
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { callReference, readFacts, referenceRoot, type ReferenceAnswer } from './support/reference-protos.js';
import { startTestServer, type TestServer } from './support/server.js';

const root = referenceRoot(readFacts(['v2', 'v2beta1', 'v1']));
const digest = (c: string) => `sha256:${c.repeat(64)}`;

/** One rpc (service below chainguard.platform) through the reference's codec. */
const call = (s: TestServer, client: grpc.Client, service: string, rpc: string, request: object) =>
  callReference(root, client, service, rpc, request, s.token);

let s: TestServer;
let client: grpc.Client;
const rpc = (service: string, name: string, request: object) => call(s, client, service, name, request);

test.before(async () => {
  s = await startTestServer();
  client = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
});
test.after(async () => {
  client.close();
  await s.stop();
});

for (const version of ['v2', 'v2beta1'])
  test(`a group update naming verified unchanged needs no privilege; changing it does (${version})`, async () => {
    const G = `iam.${version}.GroupsService`;
    const made = await rpc(G, 'CreateGroup', { parent: s.bootstrap.organization, group: { name: `team-${version}` } });
    assert.is(made.code, 0, made.message);
    const uid = made.value.uid;
    const mask = { paths: ['name', 'description', 'verified'] };
    const same = await rpc(G, 'UpdateGroup', {
      group: { uid, name: `team-${version}`, description: 'the team', verified: false },
      update_mask: mask,
    });
    assert.is(same.code, 0, same.message);
    assert.is(same.value.description, 'the team');
    const raised = await rpc(G, 'UpdateGroup', { group: { uid, name: 'x', verified: true }, update_mask: mask });
    assert.is(raised.code, grpc.status.PERMISSION_DENIED, 'setting verified takes the privilege');
    const http = await s.call('PATCH', `/iam/v2/groups/${uid}?update_mask=name,description,verified`, {
      name: `team-${version}`,
      description: 'over HTTP',
      verified: false,
    });
    assert.is(http.status, 200, JSON.stringify(http.body));
    assert.is(http.body.description, 'over HTTP');
  });

for (const version of ['v2', 'v2beta1'])
  test(`a * update carrying output-only and hydrated fields ignores them (${version})`, async () => {
    const org = s.bootstrap.organization;
    const I = `iam.${version}.IdentitiesService`;
    const identity = await rpc(I, 'CreateIdentity', {
      parent: org,
      identity: { name: `bot-${version}`, claim_match: { issuer: 'https://i.example', subject: `bot-${version}` } },
    });
    assert.is(identity.code, 0, identity.message);
    const role = await rpc(`iam.${version}.RolesService`, 'CreateRole', {
      parent: org,
      role: { name: `reader-${version}`, capabilities: ['CAP_REPO_LIST'] },
    });
    const B = `iam.${version}.RoleBindingsService`;
    const made = await rpc(B, 'CreateRoleBinding', {
      parent: org,
      role_binding: { identity_uid: identity.value.uid, role_uid: role.value.uid },
    });
    assert.is(made.code, 0, made.message);
    // As the provider sends it: the binding as read, hydrated group, identity and role, uid and times included.
    const read = (await rpc(B, 'GetRoleBinding', { uid: made.value.uid })).value;
    assert.ok(read.identity && read.role && read.create_time, JSON.stringify(read));
    const updated = await rpc(B, 'UpdateRoleBinding', { role_binding: read, update_mask: { paths: ['*'] } });
    assert.is(updated.code, 0, `${updated.message} ${JSON.stringify(updated.details)}`);
    assert.is(updated.value.role_uid, role.value.uid);
    const got = await s.call('GET', `/iam/v2/roleBindings/${made.value.uid}`);
    const http = await s.call('PATCH', `/iam/v2/roleBindings/${made.value.uid}?update_mask=*`, got.body);
    assert.is(http.status, 200, JSON.stringify(http.body));
    assert.is(http.body.identityUid, identity.value.uid);
  });

for (const version of ['v2', 'v2beta1'])
  test(`deleting what is gone is NOT_FOUND (${version}, and HTTP)`, async () => {
    const R = `registry.${version}.ReposService`;
    const repo = await rpc(R, 'CreateRepo', { parent: s.bootstrap.organization, repo: { name: `gone-${version}` } });
    assert.is((await rpc(R, 'DeleteRepo', { uid: repo.value.uid })).code, 0);
    const again = await rpc(R, 'DeleteRepo', { uid: repo.value.uid });
    assert.is(again.code, grpc.status.NOT_FOUND);
    assert.ok(again.details?.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.ResourceInfo'));
    assert.is((await s.call('DELETE', `/registry/v2/repos/${repo.value.uid}`)).status, 404);
  });

test('RESOURCE_EXHAUSTED leaves nothing done: a refused create retried makes one record (gRPC v1, v2beta1, HTTP)', async () => {
  const limited = await startTestServer(undefined, {
    RATE_LIMIT: '1',
    RATE_LIMIT_BURST: '1',
    EVENTS_MAX_SUBSCRIPTIONS: '1',
  });
  const c = new grpc.Client(new URL(limited.url).host, grpc.credentials.createInsecure());
  try {
    const org = limited.bootstrap.organization;
    /** Calls until one is not refused for the rate, answering the refusals seen on the way. */
    const retried = async (make: () => Promise<ReferenceAnswer>) => {
      const refusals: ReferenceAnswer[] = [];
      for (;;) {
        const a = await make();
        if (a.code !== grpc.status.RESOURCE_EXHAUSTED || !a.message?.includes('per second')) return { a, refusals };
        refusals.push(a);
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    const creates = [
      () => call(limited, c, 'registry.Registry', 'CreateRepo', { parent_id: org, repo: { name: 'one' } }),
      () => call(limited, c, 'registry.v2beta1.ReposService', 'CreateRepo', { parent: org, repo: { name: 'two' } }),
    ];
    let refused = 0;
    for (const make of creates) {
      // Spend the bucket, so the create is refused first and then retried, as the provider does.
      await call(limited, c, 'registry.Registry', 'ListRepos', { name: 'none' });
      const { a, refusals } = await retried(make);
      assert.is(a.code, 0, a.message);
      refused += refusals.length;
    }
    assert.ok(refused >= 1, 'a create was refused for the rate at least once');
    const http = await retried(async () => {
      const r = await limited.call('POST', `/registry/v2/repos/${org}`, { name: 'three' });
      return {
        code: r.status === 429 ? grpc.status.RESOURCE_EXHAUSTED : r.status === 200 ? 0 : r.status,
        message: r.body?.message,
        value: r.body,
      };
    });
    assert.is(http.a.code, 0, http.a.message);
    const listed = await retried(() =>
      call(limited, c, 'registry.Registry', 'ListRepos', { uidp: { children_of: org } }),
    );
    assert.equal(listed.a.value.items.map((r: any) => r.name).sort(), ['one', 'three', 'two'], 'one record per create');

    // A quota refusal (RESOURCE_EXHAUSTED inside the write) leaves nothing either.
    const sub = (sink: string) => () =>
      call(limited, c, 'events.Subscriptions', 'Create', { parent_id: org, subscription: { sink } });
    assert.is((await retried(sub('http://127.0.0.1:9/a'))).a.code, 0);
    const over = await retried(sub('http://127.0.0.1:9/b'));
    assert.is(over.a.code, grpc.status.RESOURCE_EXHAUSTED, over.a.message);
    const subs = await retried(() =>
      call(limited, c, 'events.Subscriptions', 'List', { uidp: { descendants_of: org } }),
    );
    assert.equal(
      subs.a.value.items.map((x: any) => x.sink),
      ['http://127.0.0.1:9/a'],
    );
  } finally {
    c.close();
    await limited.stop();
  }
});

test('a digest tag created twice under one name is one tag (the provider retries creates)', async () => {
  const org = s.bootstrap.organization;
  const repo = await rpc('registry.Registry', 'CreateRepo', { parent_id: org, repo: { name: 'retried' } });
  for (const c of ['a', 'a']) {
    const tag = await rpc('registry.Registry', 'CreateTag', {
      repo_id: repo.value.id,
      tag: { name: 'v1', digest: digest(c) },
    });
    assert.is(tag.code, 0, tag.message);
  }
  const tags = await rpc('registry.Registry', 'ListTags', { uidp: { children_of: repo.value.id } });
  assert.is(tags.value.items.length, 1);
});

test.run();
