// One pipeline under every adapter: the same order of checks through v2 and v1, and one set of routing rules
// for v2, v1, the token exchange and the documents.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { query } from './support/db.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;
let repo: string;
let role: string;
let asViewer: Record<string, string>;

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
  repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'nginx' })).body.uid;
  role = (await s.call('POST', `/iam/v2/roles/${org}`, { name: 'custom', capabilities: ['CAP_REPO_LIST'] })).body.uid;
  const roles = (await s.call('GET', '/iam/v2/roles?page_size=200')).body.roles;
  const viewer = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'viewer' })).body.uid;
  await s.call('POST', `/iam/v2/roleBindings/${org}`, {
    identityUid: viewer,
    roleUid: roles.find((r: any) => r.name === 'viewer').uid,
  });
  asViewer = { authorization: `Bearer ${await s.mint(viewer)}` };
});
test.after(async () => s.stop());

interface Case {
  what: string;
  v2: [method: string, path: string, body?: unknown];
  v1: [method: string, path: string, body?: unknown];
}

/** Requests that are invalid in some way, each in v2's and in v1's form. */
const cases = (): Case[] => [
  {
    what: 'create with a bad name',
    v2: ['POST', `/registry/v2/repos/${org}`, { name: 'NOT VALID' }],
    v1: ['POST', `/registry/v1/repos/${org}`, { name: 'NOT VALID' }],
  },
  {
    what: 'create with an unknown field',
    v2: ['POST', `/registry/v2/repos/${org}`, { name: 'x', color: 1 }],
    v1: ['POST', `/registry/v1/repos/${org}`, { name: 'x', color: 1 }],
  },
  {
    what: 'update with a capability nobody spells so',
    v2: ['PATCH', `/iam/v2/roles/${role}`, { capabilities: ['CAP_NOPE'] }],
    v1: ['PUT', `/iam/v1/roles/${role}`, { name: 'custom', capabilities: ['no.such.cap'] }],
  },
  {
    what: 'update with a wrong type',
    v2: ['PATCH', `/registry/v2/repos/${repo}`, { description: 7 }],
    v1: ['PUT', `/registry/v1/repos/${repo}`, { name: 'nginx', description: 7 }],
  },
  {
    what: 'create with a nested object that lacks a required field',
    v2: ['POST', `/iam/v2/identityProviders/${org}`, { name: 'idp', defaultRole: role, oidc: { clientId: 'c' } }],
    v1: ['POST', `/iam/v1/identityProviders/${org}`, { name: 'idp', defaultRole: role, oidc: { clientId: 'c' } }],
  },
  {
    what: 'delete of a record that does not exist',
    v2: ['DELETE', `/registry/v2/repos/${org}/0000000000000000`],
    v1: ['DELETE', `/registry/v1/repos/${org}/0000000000000000`],
  },
];

const send = (r: [string, string, unknown?], headers?: Record<string, string>) => s.call(r[0], r[1], r[2], headers);

test('a caller without the capability is refused before validation and lookup, through v2 and v1 alike', async () => {
  for (const c of cases()) {
    for (const [adapter, request] of [
      ['v2', c.v2],
      ['v1', c.v1],
    ] as const) {
      const r = await send(request, asViewer);
      assert.is(r.status, 403, `${adapter} ${c.what}: ${JSON.stringify(r.body)}`);
      assert.is(r.body.code, 7);
    }
  }
});

test('a caller with the capability gets the same refusal from v2 and v1', async () => {
  for (const c of cases()) {
    const [v2, v1] = [await send(c.v2), await send(c.v1)];
    assert.is(v1.status, v2.status, `${c.what}: v2 ${JSON.stringify(v2.body)} v1 ${JSON.stringify(v1.body)}`);
    assert.is(v1.body.code, v2.body.code, c.what);
    assert.ok(v2.status === 400 || v2.status === 404, `${c.what}: ${v2.status}`);
  }
});

function expect405(r: Reply, allowed: string[], what: string) {
  assert.is(r.status, 405, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, 12, what);
  assert.equal(r.headers.get('allow')!.split(', ').sort(), [...allowed].sort(), what);
}

test('a wrong method is 405 with Allow everywhere: v2, v1, the token exchange, the documents', async () => {
  expect405(await s.call('PUT', `/registry/v2/repos/${repo}`, {}), ['GET', 'PATCH', 'DELETE', 'POST'], 'v2');
  expect405(await s.call('PATCH', `/registry/v1/repos/${repo}`, {}), ['POST', 'PUT', 'DELETE'], 'v1 record');
  expect405(await s.call('DELETE', '/registry/v1/repos'), ['GET'], 'v1 collection');
  // The exchange's bearer token is another issuer's: the method is refused before any token is read.
  expect405(
    await s.call('DELETE', '/sts/exchange', undefined, { authorization: 'Bearer not-ours' }),
    ['GET', 'POST'],
    'exchange',
  );
  expect405(await s.call('POST', '/openapi.json', {}), ['GET'], 'a document');
});

test('an unknown path is 404 with the AIP-193 body everywhere', async () => {
  for (const path of ['/registry/v2/nothing', '/registry/v1/nothing', '/sts/nothing', '/nothing']) {
    const r = await s.call('GET', path);
    assert.is(r.status, 404, path);
    assert.is(r.body.code, 5, path);
    assert.match(r.body.message, /no route/);
  }
});

test("a hand-written write records the served operation's declared event and takes effect at once (v2 and v1's register)", async () => {
  const roles = (await s.call('GET', '/iam/v2/roles?page_size=200')).body.roles;
  const editor = roles.find((r: any) => r.name === 'editor').uid;
  for (const [path, body] of [
    ['/iam/v2/groupInvites:accept', (code: string) => ({ code })],
    ['/auth/v1/register', (code: string) => ({ code })],
  ] as const) {
    const invitee = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'invitee' })).body.uid;
    const asInvitee = { authorization: `Bearer ${await s.mint(invitee)}` };
    assert.is(
      (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'before' }, asInvitee)).status,
      403,
      'no grant yet',
    );
    const invite = (await s.call('POST', `/iam/v2/groupInvites/${org}`, { roleUid: editor, ttl: '3600s' })).body;
    const accepted = await s.call('POST', path, body(invite.code), asInvitee);
    assert.is(accepted.status, 200, `${path}: ${JSON.stringify(accepted.body)}`);
    assert.is(
      (await s.call('POST', `/registry/v2/repos/${org}`, { name: `after-${path.length}` }, asInvitee)).status,
      200,
      `${path}: the grant holds at once`,
    );
    const events = await query(
      s,
      "select type, actor from event_outbox where type = 'dev.chainguard.api.iam.rolebindings.created.v1' and actor = ?",
      [invitee],
    );
    assert.is(events.length, 1, `${path}: the binding's declared event`);
  }
});

test.run();
