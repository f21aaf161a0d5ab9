// A client built from the reference system's own protos, not ours: its codec is made from the facts of those
// protos (test/facts/grpc-v2.json and grpc-v2beta1.json, the same services under the pre-release package
// names the reference's Terraform provider calls), so these calls prove the wire works for the reference's clients.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readStatusDetails } from '../runtime/grpc/status.js';
import { readFacts, referenceRoot } from './support/reference-protos.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let client: grpc.Client;
const root = referenceRoot(readFacts(['v2', 'v2beta1']));

/** One rpc through the reference codec: the answer as the reference's message, or the error and its details. */
function call(service: string, rpc: string, request: object): Promise<{ code: number; value?: any; details?: any[] }> {
  const method = root.lookup(`chainguard.platform.${service}`) as protobuf.Service;
  const m = method.methods[rpc];
  const req = m.resolvedRequestType!;
  const res = m.resolvedResponseType!;
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${s.token}`);
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      `/${method.fullName.slice(1)}/${rpc}`,
      (o: object) => Buffer.from(req.encode(req.fromObject(o)).finish()),
      (b: Buffer) => res.toObject(res.decode(b), { longs: String, enums: String }),
      request,
      metadata,
      (e, value) => {
        if (!e) return resolve({ code: 0, value });
        const bin = e.metadata.get('grpc-status-details-bin')[0] as Buffer | undefined;
        resolve({ code: e.code, details: bin ? readStatusDetails(bin).details : [] });
      },
    ),
  );
}

test.before(async () => {
  s = await startTestServer();
  client = new grpc.Client(new URL(s.url).host, grpc.credentials.createInsecure());
});
test.after(async () => {
  client.close();
  await s.stop();
});

for (const version of ['v2', 'v2beta1'])
  test(`a client of the reference protos creates, reads, lists, updates and deletes a repo unchanged (${version})`, async () => {
    const org = s.bootstrap.organization;
    const R = `registry.${version}.ReposService`;
    const created = await call(R, 'CreateRepo', {
      parent: org,
      repo: { name: 'nginx', catalog_tier: 'CATALOG_TIER_FIPS', aliases: ['web'], sync_config: { source: 's' } },
    });
    assert.is(created.code, 0, JSON.stringify(created.details));
    const uid = created.value.uid;
    assert.is(created.value.catalog_tier, 'CATALOG_TIER_FIPS');
    assert.equal(created.value.aliases, ['web']);
    assert.ok(Number(created.value.create_time.seconds) > 1_700_000_000);

    const listed = await call(R, 'ListRepos', { uidp: { descendants_of: org }, page_size: 10 });
    assert.equal(
      listed.value.repos.map((r: any) => r.uid),
      [uid],
    );
    assert.is(listed.value.total_count, '1');

    const updated = await call(R, 'UpdateRepo', {
      repo: { uid, description: 'web server', sync_config: { source: 't' } },
      update_mask: { paths: ['description', 'sync_config'] },
    });
    assert.is(updated.value.description, 'web server');
    assert.is(updated.value.sync_config.source, 't');
    assert.is((await call(R, 'GetRepo', { uid })).value.description, 'web server');

    assert.is((await call(R, 'DeleteRepo', { uid })).code, 0);
    const gone = await call(R, 'GetRepo', { uid });
    assert.is(gone.code, grpc.status.NOT_FOUND);
    assert.ok(gone.details?.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.ResourceInfo'));
  });

test('a client of the reference protos manages identities (oneofs), roles (Capability enum) and bindings', async () => {
  const org = s.bootstrap.organization;
  const identity = await call('iam.v2.IdentitiesService', 'CreateIdentity', {
    parent: org,
    identity: { name: 'ci', aws_identity: { aws_account: '123456789012', arn: 'arn:aws:iam::123456789012:role/ci' } },
  });
  assert.is(identity.code, 0, JSON.stringify(identity.details));
  assert.is(identity.value.aws_identity.arn, 'arn:aws:iam::123456789012:role/ci');
  const role = await call('iam.v2.RolesService', 'CreateRole', {
    parent: org,
    role: { name: 'puller', capabilities: ['CAP_REPO_LIST', 'CAP_MANIFEST_METADATA_LIST'] },
  });
  assert.equal(role.value.capabilities, ['CAP_REPO_LIST', 'CAP_MANIFEST_METADATA_LIST']);
  const binding = await call('iam.v2.RoleBindingsService', 'CreateRoleBinding', {
    parent: org,
    role_binding: { identity_uid: identity.value.uid, role_uid: role.value.uid },
  });
  assert.is(binding.code, 0, JSON.stringify(binding.details));
  const bindings = await call('iam.v2.RoleBindingsService', 'ListRoleBindings', {
    uidp: { children_of: org },
    role: role.value.uid,
  });
  assert.equal(
    bindings.value.role_bindings.map((b: any) => [b.identity_uid, b.identity.name, b.role.name]),
    [[identity.value.uid, 'ci', 'puller']],
    'role bindings come hydrated, as the reference answers them',
  );
});

test.run();
