// The reference's Terraform provider's v1 calls, made by a client whose codec comes from the reference's own protos
// (test/facts/grpc-v1.json), not ours: subscriptions, repos and tags created, listed, updated and deleted,
// identities looked up, organizations listed, and v1's empty list for the id of a record that is gone.
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { callReference, readFacts, referenceRoot, type ReferenceAnswer } from './support/reference-protos.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let client: grpc.Client;
const root = referenceRoot(readFacts(['v1']));
const digest = (c: string) => `sha256:${c.repeat(64)}`;

/** One rpc through the reference codec, as the provider makes it (`service` below chainguard.platform). */
const call = (service: string, rpc: string, request: object, token = s.token) =>
  callReference(root, client, service, rpc, request, token);

const ok = (a: ReferenceAnswer) => assert.is(a.code, 0, `${a.message} ${JSON.stringify(a.details)}`);

test.before(async () => {
  s = await startTestServer();
  client = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
});
test.after(async () => {
  client.close();
  await s.stop();
});

test('v1 Subscriptions: create, list by id, delete, and the list by id of the gone one is empty', async () => {
  const org = s.bootstrap.organization;
  const created = await call('events.Subscriptions', 'Create', {
    parent_id: org,
    subscription: { sink: 'http://127.0.0.1:9/hook' },
  });
  ok(created);
  const id = created.value.id;
  assert.ok(id.startsWith(`${org}/`), id);
  assert.is(created.value.sink, 'http://127.0.0.1:9/hook');
  const listed = await call('events.Subscriptions', 'List', { id });
  ok(listed);
  assert.equal(
    listed.value.items.map((x: any) => x.id),
    [id],
  );
  const byGroup = await call('events.Subscriptions', 'List', { uidp: { descendants_of: org } });
  assert.ok(byGroup.value.items.some((x: any) => x.id === id));
  ok(await call('events.Subscriptions', 'Delete', { id }));
  const gone = await call('events.Subscriptions', 'List', { id });
  ok(gone);
  assert.equal(gone.value.items, [], 'a v1 list by the id of a gone record is empty, not NOT_FOUND');
});

test('v1 Registry: repos and tags created, listed, updated and deleted; empty lists after the deletes', async () => {
  const org = s.bootstrap.organization;
  const repo = await call('registry.Registry', 'CreateRepo', {
    parent_id: org,
    repo: { name: 'nginx', catalog_tier: 'APPLICATION', aliases: ['web'], sync_config: { source: 's' } },
  });
  ok(repo);
  const id = repo.value.id;
  assert.is(repo.value.name, 'nginx');
  assert.is(repo.value.catalog_tier, 'APPLICATION');
  assert.equal(repo.value.aliases, ['web']);
  assert.ok(
    Number(repo.value.create_time.seconds) > 1_700_000_000,
    'v1 HTTP spells it created_at; the proto create_time',
  );
  assert.equal(
    (await call('registry.Registry', 'ListRepos', { id })).value.items.map((r: any) => r.name),
    ['nginx'],
  );
  // v1's Update is a full replacement: what the body leaves out (aliases) is reset.
  const updated = await call('registry.Registry', 'UpdateRepo', {
    id,
    name: 'nginx',
    description: 'web server',
    catalog_tier: 'APPLICATION',
  });
  ok(updated);
  assert.is(updated.value.description, 'web server');
  assert.equal(updated.value.aliases, [], 'a v1 update replaces the whole repo');
  const byName = await call('registry.Registry', 'ListRepos', { uidp: { children_of: org }, name: 'nginx' });
  assert.equal(
    byName.value.items.map((r: any) => [r.id, r.description]),
    [[id, 'web server']],
  );

  const tag = await call('registry.Registry', 'CreateTag', {
    repo_id: id,
    tag: { name: 'latest', digest: digest('a') },
  });
  ok(tag);
  const tagId = tag.value.id;
  assert.is(tag.value.digest, digest('a'));
  assert.ok(Number(tag.value.last_updated.seconds) > 1_700_000_000, 'updateTime travels as v1 last_updated');
  const tags = await call('registry.Registry', 'ListTags', { uidp: { children_of: id } });
  assert.equal(
    tags.value.items.map((t: any) => [t.id, t.name]),
    [[tagId, 'latest']],
  );
  // The provider moves a tag with UpdateTag: a full replacement (deprecated, left out, resets).
  const marked = await call('registry.Registry', 'UpdateTag', {
    id: tagId,
    name: 'latest',
    digest: digest('b'),
    deprecated: true,
  });
  ok(marked);
  assert.equal([marked.value.digest, marked.value.deprecated], [digest('b'), true]);
  const moved = await call('registry.Registry', 'UpdateTag', { id: tagId, name: 'latest', digest: digest('c') });
  ok(moved);
  assert.equal([moved.value.id, moved.value.digest, Boolean(moved.value.deprecated)], [tagId, digest('c'), false]);
  assert.equal(
    (await call('registry.Registry', 'ListTags', { id: tagId })).value.items.map((t: any) => t.digest),
    [digest('c')],
  );
  const renamed = await call('registry.Registry', 'UpdateTag', { id: tagId, name: 'other', digest: digest('c') });
  assert.is(renamed.code, 3, 'a tag keeps its name');
  ok(await call('registry.Registry', 'DeleteTag', { id: tagId }));
  assert.equal((await call('registry.Registry', 'ListTags', { id: tagId })).value.items, []);
  ok(await call('registry.Registry', 'DeleteRepo', { id }));
  const gone = await call('registry.Registry', 'ListRepos', { id });
  ok(gone);
  assert.equal(gone.value.items, []);
});

test('v1 Groups/List finds the organization by id; Identities/Lookup by issuer and subject', async () => {
  const org = s.bootstrap.organization;
  const groups = await call('iam.Groups', 'List', { id: org });
  ok(groups);
  assert.equal(
    groups.value.items.map((g: any) => g.id),
    [org],
  );
  const identity = await call('iam.Identities', 'Create', {
    parent_id: org,
    identity: { name: 'ci', claim_match: { issuer: 'https://issuer.example', subject: 'repo:x/y' } },
  });
  ok(identity);
  const found = await call('iam.Identities', 'Lookup', { issuer: 'https://issuer.example', subject: 'repo:x/y' });
  ok(found);
  assert.is(found.value.id, identity.value.id);
  assert.is(found.value.name, 'ci');
  const unknown = await call('iam.Identities', 'Lookup', { issuer: 'https://issuer.example', subject: 'nobody' });
  assert.is(unknown.code, grpc.status.NOT_FOUND);
});

test('v1 ping answers without a token', async () => {
  const pong = await call('ping.PingService', 'Ping', {}, '');
  ok(pong);
  assert.is(pong.value.response, 'pong');
});

test('v1 errors are gRPC statuses with details; an rpc not served is a structured UNIMPLEMENTED', async () => {
  const invalid = await call('events.Subscriptions', 'Create', {
    parent_id: s.bootstrap.organization,
    subscription: {},
  });
  assert.is(invalid.code, grpc.status.INVALID_ARGUMENT);
  assert.ok(invalid.details?.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest'));
  const denied = await call('events.Subscriptions', 'List', {}, 'not-a-token');
  assert.is(denied.code, grpc.status.UNAUTHENTICATED);
  const none = await call('registry.Registry', 'GetSize', { repo_id: s.bootstrap.organization, digest: digest('b') });
  assert.is(none.code, grpc.status.UNIMPLEMENTED);
  assert.ok(none.details?.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo'));
});

test.run();
