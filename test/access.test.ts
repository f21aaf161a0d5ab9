// Access control over real HTTP with really signed tokens: who may do what where, and the 401 cases.
import { SignJWT, generateKeyPair } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lowS } from '../runtime/access/issuer.js';
import { query } from './support/db.js';
import { onPostgres } from './support/postgres.js';
import { runScript } from './support/process.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;
const roleUid: Record<string, string> = {};
const token: Record<string, string> = {};
let team: string;
let otherTeam: string;

const as = (who: string) => ({ authorization: who === 'nobody' ? '' : `Bearer ${token[who]}` });

async function identity(parent: string, name: string): Promise<string> {
  const r = await s.call('POST', `/iam/v2/identities/${parent}`, { name });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body.uid;
}

async function bind(group: string, identityUid: string, role: string) {
  const r = await s.call('POST', `/iam/v2/roleBindings/${group}`, { identityUid, roleUid: roleUid[role] });
  assert.is(r.status, 200, JSON.stringify(r.body));
}

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
  const roles = await s.call('GET', '/iam/v2/roles?page_size=200');
  for (const r of roles.body.roles) roleUid[r.name] = r.uid;
  team = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'team' })).body.uid;
  otherTeam = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'other team' })).body.uid;
  for (const [who, role, where] of [
    ['editor', 'editor', org],
    ['viewer', 'viewer', org],
    ['teamOwner', 'owner', team],
  ] as const) {
    const id = await identity(who === 'teamOwner' ? team : org, who.toLowerCase());
    await bind(where, id, role);
    token[who] = await s.mint(id);
  }
  token.unbound = await s.mint(await identity(org, 'unbound'));
  token.owner = s.token;
});
test.after(async () => s.stop());

function expectCode(r: Reply, status: number, code: number, what: string) {
  assert.is(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, code, what);
  assert.is(r.body.details.filter((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo').length, 1);
}

test('built-in roles are root records, listed to everyone who may list roles, and cannot change', async () => {
  for (const name of ['owner', 'editor', 'viewer', 'registry.pull', 'registry.push'])
    assert.match(roleUid[name] ?? '', /^[0-9a-f]{40}$/, name);
  const viewerList = await s.call('GET', '/iam/v2/roles?page_size=200', undefined, as('viewer'));
  assert.ok(viewerList.body.roles.some((r: any) => r.name === 'owner'));
  const owner = viewerList.body.roles.find((r: any) => r.name === 'owner');
  assert.ok(owner.capabilities.includes('CAP_IAM_ROLE_BINDINGS_CREATE'));
  assert.ok(!viewerList.body.roles.find((r: any) => r.name === 'viewer').capabilities.includes('CAP_REPO_CREATE'));
  const got = await s.call('GET', `/iam/v2/roles/${roleUid.viewer}`, undefined, as('viewer'));
  assert.is(got.status, 200, JSON.stringify(got.body));
  expectCode(await s.call('DELETE', `/iam/v2/roles/${roleUid.viewer}`), 400, 9, 'deleting a built-in role');
  expectCode(
    await s.call('PATCH', `/iam/v2/roles/${roleUid.viewer}`, { description: 'mine' }),
    400,
    9,
    'editing a built-in role',
  );
});

test('custom roles need a capability and cannot be deleted while bound', async () => {
  expectCode(
    await s.call('POST', `/iam/v2/roles/${org}`, { name: 'empty', capabilities: [] }),
    400,
    3,
    'a role without capabilities',
  );
  const role = (await s.call('POST', `/iam/v2/roles/${org}`, { name: 'puller', capabilities: ['CAP_REPO_LIST'] })).body;
  const id = await identity(org, 'bound');
  const binding = (await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: id, roleUid: role.uid })).body;
  const refused = await s.call('DELETE', `/iam/v2/roles/${role.uid}`);
  expectCode(refused, 400, 9, 'deleting a bound role');
  assert.match(refused.body.message, /still referenced by roleBindings/);
  assert.is((await s.call('DELETE', `/iam/v2/roleBindings/${binding.uid}`)).status, 200);
  assert.is((await s.call('DELETE', `/iam/v2/roles/${role.uid}`)).status, 200);
  expectCode(
    await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: id, roleUid: 'f'.repeat(40) }),
    400,
    3,
    'a binding to no role',
  );
});

test('permission matrix: create, get, list, update, delete of repos and groups', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${team}`, { name: 'matrix' })).body;
  const cases: [string, string, string, unknown, number][] = [
    // who, method, path, body, expected status
    ['editor', 'POST', `/registry/v2/repos/${team}`, { name: 'by-editor' }, 200],
    ['viewer', 'POST', `/registry/v2/repos/${team}`, { name: 'by-viewer' }, 403],
    ['teamOwner', 'POST', `/registry/v2/repos/${team}`, { name: 'by-team-owner' }, 200],
    ['teamOwner', 'POST', `/registry/v2/repos/${otherTeam}`, { name: 'elsewhere' }, 403],
    ['teamOwner', 'POST', `/registry/v2/repos/${org}`, { name: 'above' }, 403],
    ['unbound', 'POST', `/registry/v2/repos/${team}`, { name: 'x' }, 403],
    ['viewer', 'GET', `/registry/v2/repos/${repo.uid}`, undefined, 200],
    ['teamOwner', 'GET', `/registry/v2/repos/${repo.uid}`, undefined, 200],
    ['unbound', 'GET', `/registry/v2/repos/${repo.uid}`, undefined, 403],
    ['viewer', 'PATCH', `/registry/v2/repos/${repo.uid}`, { description: 'no' }, 403],
    ['editor', 'PATCH', `/registry/v2/repos/${repo.uid}`, { description: 'yes' }, 200],
    ['editor', 'POST', `/iam/v2/groups/${team}`, { name: 'sub' }, 403],
    ['teamOwner', 'POST', `/iam/v2/groups/${team}`, { name: 'sub' }, 200],
    ['viewer', 'DELETE', `/registry/v2/repos/${repo.uid}`, undefined, 403],
    ['editor', 'DELETE', `/iam/v2/groups/${otherTeam}`, undefined, 403],
    ['teamOwner', 'DELETE', `/registry/v2/repos/${repo.uid}`, undefined, 200],
  ];
  for (const [who, method, path, body, status] of cases) {
    const r = await s.call(method, path, body, as(who));
    assert.is(r.status, status, `${who} ${method} ${path}: ${JSON.stringify(r.body)}`);
    if (status === 403) expectCode(r, 403, 7, `${who} ${method} ${path}`);
  }
});

test("a repo's custom overlay: as the reference shapes it, changed only with CAP_REGISTRY_OVERLAYS_EDIT", async () => {
  const overlay = {
    contents: { packages: ['curl'], runtimeKeyring: [{ name: 'k', content: 'KEY' }] },
    environment: { TZ: 'UTC' },
    accounts: { runAs: 'app', users: [{ username: 'app', uid: 1000, gid: 1000 }], groups: [{ groupname: 'app' }] },
    certificates: { additional: [{ name: 'corp', content: 'PEM' }], providers: ['system'] },
  };
  const made = await s.call(
    'POST',
    `/registry/v2/repos/${org}`,
    { name: 'overlaid', customOverlay: overlay },
    as('editor'),
  );
  assert.is(made.status, 200, JSON.stringify(made.body));
  assert.equal((await s.call('GET', `/registry/v2/repos/${made.body.uid}`)).body.customOverlay, overlay);
  // A list holding it beside repos without one (SQLite renders those, and leaves this one to JavaScript).
  await s.call('POST', `/registry/v2/repos/${org}`, { name: 'plain-beside-overlaid' });
  const listed = await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}&page_size=200`);
  assert.is(listed.status, 200, JSON.stringify(listed.body));
  const byName = new Map(listed.body.repos.map((x: { name: string }) => [x.name, x]));
  assert.equal((byName.get('overlaid') as { customOverlay: unknown }).customOverlay, overlay);
  assert.is((byName.get('plain-beside-overlaid') as { customOverlay?: unknown }).customOverlay, undefined);
  const role = await s.call('POST', `/iam/v2/roles/${org}`, {
    name: 'repo maker',
    capabilities: ['CAP_REPO_CREATE', 'CAP_REPO_LIST', 'CAP_REPO_UPDATE'],
  });
  const maker = await identity(org, 'repo maker');
  await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: maker, roleUid: role.body.uid });
  const asMaker = { authorization: `Bearer ${await s.mint(maker)}` };
  const refused = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'o2', customOverlay: overlay }, asMaker);
  expectCode(refused, 403, 7, 'an overlay without CAP_REGISTRY_OVERLAYS_EDIT');
  assert.is((await s.call('POST', `/registry/v2/repos/${org}`, { name: 'o3' }, asMaker)).status, 200);
  const changed = await s.call(
    'PATCH',
    `/registry/v2/repos/${made.body.uid}?update_mask=customOverlay`,
    { customOverlay: { environment: { TZ: 'CET' } } },
    asMaker,
  );
  expectCode(changed, 403, 7, 'an overlay changed without CAP_REGISTRY_OVERLAYS_EDIT');
});

test('permission is checked before existence', async () => {
  const missing = `${otherTeam}/0123456789abcdef`;
  expectCode(
    await s.call('GET', `/registry/v2/repos/${missing}`, undefined, as('teamOwner')),
    403,
    7,
    'a missing repo where the caller has no access',
  );
  expectCode(
    await s.call('GET', `/registry/v2/repos/${missing}`, undefined, as('viewer')),
    404,
    5,
    'a missing repo where the caller has access',
  );
});

test('lists show only what the caller may list, with pagination and totalCount computed in the query', async () => {
  for (let i = 0; i < 5; i++) await s.call('POST', `/registry/v2/repos/${team}`, { name: `team-${i}` });
  for (let i = 0; i < 4; i++) await s.call('POST', `/registry/v2/repos/${otherTeam}`, { name: `other-${i}` });
  const teamCount = Number((await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${team}`)).body.totalCount);
  const all = Number((await s.call('GET', '/registry/v2/repos')).body.totalCount);
  const seen: string[] = [];
  let pageToken = '';
  do {
    const r = await s.call(
      'GET',
      `/registry/v2/repos?page_size=2${pageToken ? `&page_token=${pageToken}` : ''}`,
      undefined,
      as('teamOwner'),
    );
    assert.is(r.status, 200);
    assert.is(r.body.totalCount, String(teamCount), 'totalCount counts only visible repos');
    seen.push(...r.body.repos.map((x: any) => x.uid));
    pageToken = r.body.nextPageToken;
  } while (pageToken);
  assert.is(seen.length, teamCount);
  assert.ok(seen.every((u) => u.startsWith(`${team}/`)));
  const viewer = await s.call('GET', '/registry/v2/repos', undefined, as('viewer'));
  assert.is(viewer.body.totalCount, String(all), 'an org viewer sees every repo in the org');
  const unbound = await s.call('GET', '/registry/v2/repos', undefined, as('unbound'));
  assert.equal(unbound.body, { repos: [], nextPageToken: '', totalCount: '0', skipped: 0 });
  const groups = await s.call('GET', '/iam/v2/groups', undefined, as('teamOwner'));
  assert.ok(
    groups.body.groups.every((g: any) => g.uid === team || g.uid.startsWith(`${team}/`)),
    'no view of the organization above',
  );
});

test('an identity created and bound under a subgroup cannot see the root group registry', async () => {
  const rootRepo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'root-registry' })).body;
  const list = await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}`, undefined, as('teamOwner'));
  assert.is(list.body.totalCount, '0');
  expectCode(
    await s.call('GET', `/registry/v2/repos/${rootRepo.uid}`, undefined, as('teamOwner')),
    403,
    7,
    'the root registry',
  );
});

test('no escalation: a binding cannot grant capabilities the caller lacks there', async () => {
  const editorRole = (
    await s.call('POST', `/iam/v2/roles/${team}`, {
      name: 'team editor',
      capabilities: ['CAP_REPO_LIST', 'CAP_REPO_CREATE'],
    })
  ).body;
  const newcomer = await identity(team, 'newcomer');
  const ok = await s.call(
    'POST',
    `/iam/v2/roleBindings/${team}`,
    { identityUid: newcomer, roleUid: editorRole.uid },
    as('teamOwner'),
  );
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  const escalate = await s.call(
    'POST',
    `/iam/v2/roleBindings/${team}`,
    { identityUid: newcomer, roleUid: roleUid.owner },
    as('teamOwner'),
  );
  assert.is(escalate.status, 200, 'an owner of the team may grant owner in the team');
  const limited = (
    await s.call('POST', `/iam/v2/roles/${team}`, {
      name: 'binder',
      capabilities: ['CAP_IAM_ROLE_BINDINGS_CREATE', 'CAP_REPO_LIST'],
    })
  ).body;
  const binder = await identity(team, 'binder');
  await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: binder, roleUid: limited.uid });
  const binderToken = await s.mint(binder);
  const denied = await s.call(
    'POST',
    `/iam/v2/roleBindings/${team}`,
    { identityUid: binder, roleUid: roleUid.owner },
    { authorization: `Bearer ${binderToken}` },
  );
  expectCode(denied, 403, 7, 'granting owner without holding its capabilities');
  const allowed = await s.call(
    'POST',
    `/iam/v2/roleBindings/${team}`,
    { identityUid: newcomer, roleUid: limited.uid },
    { authorization: `Bearer ${binderToken}` },
  );
  assert.is(allowed.status, 200, 'granting a role whose capabilities the caller holds');
});

test('role bindings are answered hydrated: identity with subject and issuer, group, role; no updateTime', async () => {
  const id = (
    await s.call('POST', `/iam/v2/identities/${org}`, {
      name: 'hydrated',
      description: 'ci',
      claimMatch: { issuer: 'https://token.actions.example', subject: 'repo:acme/app' },
    })
  ).body;
  const created = await s.call('POST', `/iam/v2/roleBindings/${team}`, {
    identityUid: id.uid,
    roleUid: roleUid.viewer,
  });
  assert.is(created.status, 200, JSON.stringify(created.body));
  const b = created.body;
  assert.equal(b.identity, {
    uid: id.uid,
    name: 'hydrated',
    description: 'ci',
    subject: 'repo:acme/app',
    issuer: 'https://token.actions.example',
  });
  assert.equal(b.group, { uid: team, name: 'team', description: '' });
  assert.equal(b.role, { uid: roleUid.viewer, name: 'viewer', description: 'Reads everything in the group' });
  assert.match(b.createTime, /Z$/);
  assert.is(b.updateTime, undefined);
  assert.equal((await s.call('GET', `/iam/v2/roleBindings/${b.uid}`)).body, b, 'get returns the same form');
  const listed = await s.call('GET', `/iam/v2/roleBindings?uidp.children_of=${team}&identity=${id.uid}`);
  assert.equal(listed.body.roleBindings, [b], 'list returns the same form');
});

test('every kind of bad credential is 401 UNAUTHENTICATED with an ErrorInfo', async () => {
  const good = s.token;
  const payload = JSON.parse(Buffer.from(good.split('.')[1], 'base64url').toString());
  const { privateKey } = await generateKeyPair('ES256');
  const forge = (claims: Record<string, unknown>, key = privateKey) =>
    new SignJWT({ ...payload, ...claims })
      .setProtectedHeader({
        alg: 'ES256',
        typ: 'JWT',
        kid: JSON.parse(Buffer.from(good.split('.')[0], 'base64url').toString()).kid,
      })
      .sign(key);
  const cases: [string, Record<string, string>, RegExp][] = [
    ['missing', { authorization: '' }, /bearer token is required/],
    ['not bearer', { authorization: `Basic ${good}` }, /Bearer <token>/],
    ['malformed', { authorization: 'Bearer not.a.jwt' }, /malformed/],
    ['bad signature', { authorization: `Bearer ${await forge({})}` }, /signature/],
    ['tampered', { authorization: `Bearer ${good.slice(0, -4)}AAAA` }, /signature|malformed/],
  ];
  for (const [what, headers, message] of cases) {
    const r = await s.call('GET', '/registry/v2/repos', undefined, headers);
    expectCode(r, 401, 16, what);
    assert.match(r.body.message, message, what);
  }
  assert.is(
    (await s.call('GET', '/ping/v2/ping', undefined, { authorization: '' })).status,
    200,
    'ping needs no token',
  );
  assert.is((await s.call('GET', '/.well-known/jwks.json', undefined, { authorization: '' })).status, 200);
  const discovery = await s.call('GET', '/.well-known/openid-configuration', undefined, { authorization: '' });
  assert.is(discovery.body.issuer, s.url);
});

test('expired, wrong-audience and wrong-issuer tokens of our own key are refused', async () => {
  const { importJWK } = await import('jose');
  const keys = await s.signingKeys();
  const key = await importJWK(keys[keys.length - 1].privateJwk, 'ES256');
  const now = Math.floor(Date.now() / 1000);
  const sign = (iss: string, aud: string, exp: number) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: keys[keys.length - 1].kid })
      .setIssuer(iss)
      .setAudience(aud)
      .setSubject(s.bootstrap.owner)
      .setIssuedAt(Math.min(now, exp - 60))
      .setExpirationTime(exp)
      .sign(key)
      .then(lowS);
  const valid = await sign(s.url, s.url, now + 600);
  assert.is(
    (await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${valid}` })).status,
    200,
    'the control case passes',
  );
  for (const [what, t, message] of [
    ['expired', await sign(s.url, s.url, now - 600), /expired/],
    ['wrong audience', await sign(s.url, 'https://elsewhere', now + 600), /aud/],
    ['wrong issuer', await sign('https://elsewhere', s.url, now + 600), /iss/],
  ] as const) {
    const r = await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${t}` });
    expectCode(r, 401, 16, what);
    assert.match(r.body.message, message, what);
  }
});

test('key rotation: old tokens keep working until they expire, new ones use the new key', async () => {
  const old = await s.mint(s.bootstrap.owner);
  const r = await runScript('scripts/rotate-key.ts', [], { ...s.env, ISSUER_URL: s.url });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /publishes 2 key\(s\)/);
  // On PostgreSQL the server sees the rotation in the database within a second (it polls): waited for, not assumed.
  let jwks = (await s.call('GET', '/.well-known/jwks.json')).body.keys;
  for (const end = Date.now() + 5000; jwks.length < 2 && Date.now() < end;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    jwks = (await s.call('GET', '/.well-known/jwks.json')).body.keys;
  }
  assert.is(jwks.length, 2);
  const fresh = await s.mint(s.bootstrap.owner);
  const kidOf = (t: string) => JSON.parse(Buffer.from(t.split('.')[0], 'base64url').toString()).kid;
  assert.is.not(kidOf(fresh), kidOf(old));
  assert.is(kidOf(fresh), jwks[1].kid);
  for (const t of [old, fresh])
    assert.is((await s.call('GET', '/registry/v2/repos', undefined, { authorization: `Bearer ${t}` })).status, 200);
});

test('the creator of an organization becomes its owner', async () => {
  const founder = await identity(org, 'founder');
  await bind(org, founder, 'owner');
  const scoped = await s.mint(founder);
  const refused = await s.call('POST', '/iam/v2/groups', { name: 'second org' }, { authorization: `Bearer ${scoped}` });
  expectCode(refused, 400, 9, 'an identity confined to its organization cannot found another');
  const rootIdentity = (await s.call('POST', '/iam/v2/identities', { name: 'founder' })).body.uid;
  await bind(org, rootIdentity, 'owner');
  const unscoped = { authorization: `Bearer ${await s.mint(rootIdentity)}` };
  const created = await s.call('POST', '/iam/v2/groups', { name: 'second org' }, unscoped);
  assert.is(created.status, 200, JSON.stringify(created.body));
  const repo = await s.call('POST', `/registry/v2/repos/${created.body.uid}`, { name: 'mine' }, unscoped);
  assert.is(repo.status, 200, JSON.stringify(repo.body));
  expectCode(await s.call('GET', `/iam/v2/groups/${created.body.uid}`, undefined, as('editor')), 403, 7, 'another org');
  expectCode(
    await s.call('POST', '/iam/v2/groups', { name: 'nope' }, as('viewer')),
    403,
    7,
    'a viewer creating an organization',
  );
});

/** The server's count of emptied grants caches, from /metrics. */
async function invalidations(server: TestServer): Promise<number> {
  const text = (await server.call('GET', '/metrics')).body as string;
  const m = /^grants_cache_invalidations_total (\d+)$/m.exec(text);
  assert.ok(m, 'grants_cache_invalidations_total is exported');
  return Number(m![1]);
}

test('refusals read the grants again, one read at a time per identity: 60 refused requests at once are not 60 reads', async () => {
  const reads = async () => {
    const text = (await s.call('GET', '/metrics')).body as string;
    return Number(/^db_statement_duration_seconds_count\{kind="read"\} (\d+)$/m.exec(text)![1]);
  };
  const refused = () => s.call('GET', `/iam/v2/groups/${org}`, undefined, as('unbound'));
  assert.is((await refused()).status, 403, 'its grants cached now');
  const before = await reads();
  const answers = await Promise.all(Array.from({ length: 60 }, refused));
  assert.ok(
    answers.every((r) => r.status === 403),
    'each refused',
  );
  // A grants read is three statements (identity, bindings, roles): one each would be 180. The rest is the
  // server's own polling (PostgreSQL: the keys' version 4 times a second) and the /metrics call.
  const spent = (await reads()) - before;
  assert.ok(spent < 60, `${spent} reads for 60 refusals`);
});

test('only a change of grants empties the grants caches: not a profile update by anyone', async () => {
  const before = await invalidations(s);
  for (const who of ['viewer', 'unbound', 'editor']) {
    const r = await s.call(
      'PATCH',
      '/iam/v2/identities:updateIdentityMetadata',
      { identityMetadata: { jobTitle: `${who} ${Math.random()}` } },
      as(who),
    );
    assert.is(r.status, 200, JSON.stringify(r.body));
  }
  assert.is((await s.call('PATCH', `/iam/v2/groups/${team}`, { description: 'renamed' })).status, 200);
  assert.is(await invalidations(s), before, 'profile and group updates leave the caches alone');
  const subject = await identity(org, 'cached');
  assert.is(await invalidations(s), before, 'a new identity grants nothing yet');
  await bind(team, subject, 'viewer');
  assert.is(await invalidations(s), before + 1, 'a new binding empties them');
});

test('a binding removed where no notification tells (another process, a lost one) stops working within the time limit', async () => {
  const server = await startTestServer(undefined, { GRANTS_CACHE_SECONDS: '1' });
  try {
    const group = (await server.call('POST', `/iam/v2/groups/${server.bootstrap.organization}`, { name: 'g' })).body
      .uid;
    const id = (await server.call('POST', `/iam/v2/identities/${group}`, { name: 'revoked' })).body.uid;
    const roles = await server.call('GET', '/iam/v2/roles?page_size=200');
    const viewer = roles.body.roles.find((r: any) => r.name === 'viewer').uid;
    const binding = await server.call('POST', `/iam/v2/roleBindings/${group}`, { identityUid: id, roleUid: viewer });
    assert.is(binding.status, 200, JSON.stringify(binding.body));
    const headers = { authorization: `Bearer ${await server.mint(id)}` };
    assert.is((await server.call('GET', `/iam/v2/groups/${group}`, undefined, headers)).status, 200, 'cached now');
    // Behind the server's back: no write of its own, no notification.
    await query(server, 'delete from role_bindings where uid = ?', [binding.body.uid], true);
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await server.call('GET', `/iam/v2/groups/${group}`, undefined, headers)).status;
    }
    assert.is(status, 403, 'refused once the cached grants are older than GRANTS_CACHE_SECONDS');
  } finally {
    await server.stop();
  }
});

test("a binding removed by another process is refused at the holder's next write, its grants still cached", async () => {
  const id = await identity(org, 'writer until revoked');
  const binding = await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: id, roleUid: roleUid.owner });
  assert.is(binding.status, 200, JSON.stringify(binding.body));
  const headers = { authorization: `Bearer ${await s.mint(id)}` };
  const patch = (description: string) => s.call('PATCH', `/iam/v2/groups/${team}`, { description }, headers);
  const first = await patch('written while bound');
  assert.is(first.status, 200, JSON.stringify(first.body));
  // Behind the server's back: no write of its own, no notification; the cache would hold for 30 s.
  await query(s, 'delete from role_bindings where uid = ?', [binding.body.uid], true);
  expectCode(await patch('written once unbound'), 403, 7, 'the write reads the grants it relies on again');
  if (!onPostgres()) {
    // What the write read replaced the cached grants: the holder's reads are refused too, not for 30 s more.
    const read = await s.call('GET', `/iam/v2/groups/${team}`, undefined, headers);
    expectCode(read, 403, 7, 'a read after the refused write');
  }
  const group = await s.call('GET', `/iam/v2/groups/${team}`);
  assert.is(group.body.description, 'written while bound');
  // A record that does not exist, written by a caller whose grant went the same way: refused, not NOT_FOUND (the
  // grants and the record are read together in the write; the refusal comes first and tells nothing of the record).
  const other = await identity(org, 'writer of a missing group');
  const bound = await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: other, roleUid: roleUid.owner });
  assert.is(bound.status, 200, JSON.stringify(bound.body));
  const its = { authorization: `Bearer ${await s.mint(other)}` };
  const warm = await s.call('PATCH', `/iam/v2/groups/${team}`, { description: 'written while bound' }, its);
  assert.is(warm.status, 200, JSON.stringify(warm.body));
  await query(s, 'delete from role_bindings where uid = ?', [bound.body.uid], true);
  const missing = `/iam/v2/groups/${team}/0123456789abcdef`;
  expectCode(await s.call('PATCH', missing, { description: 'x' }, its), 403, 7, 'a missing group, the grant gone');
});

test('after another process commits, a write reads the grants it relies on once, then trusts its cache again', async () => {
  // SQLite: the change mark tells a write that no grant row changed since its grants were cached (PostgreSQL
  // reads them locked at every write).
  if (onPostgres()) return;
  const writes = async () => {
    const text = (await s.call('GET', '/metrics')).body as string;
    return Number(/^db_statement_duration_seconds_count\{kind="write"\} (\d+)$/m.exec(text)![1]);
  };
  const headers = as('teamOwner');
  const patch = async (description: string) => {
    const r = await s.call('PATCH', `/iam/v2/groups/${team}`, { description }, headers);
    assert.is(r.status, 200, JSON.stringify(r.body));
  };
  // One patch at a time, each its own transaction: statements per patch, with the grants cached and unchanged.
  await patch('warm');
  const before = await writes();
  for (let i = 0; i < 5; i++) await patch(`cached ${i}`);
  const cached = ((await writes()) - before) / 5;
  // Behind the server's back: a commit to a table no grant is made of.
  await query(s, 'update groups set description = ? where uid = ?', ['written elsewhere', org], true);
  const after = await writes();
  for (let i = 0; i < 5; i++) await patch(`after ${i}`);
  const spent = (await writes()) - after;
  assert.ok(spent > 5 * cached, `the first write reads the grants again (${spent} statements, ${cached} a patch)`);
  assert.ok(spent <= 5 * cached + 1, `only the first: ${spent} statements for 5 patches of ${cached}`);
});

test('PostgreSQL: a lost listening connection comes back and drops the caches, so no change stays unheard', async () => {
  if (!onPostgres()) return;
  const before = await invalidations(s);
  const terminated = await query(
    s,
    "select pg_terminate_backend(pid) as gone from pg_stat_activity where application_name = 'platform-access-listener' and datname = current_database()",
  );
  assert.is(terminated.length, 1, 'one listening connection per server');
  let listening: any[] = [];
  for (let i = 0; i < 100 && listening.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    listening = await query(
      s,
      "select pid from pg_stat_activity where application_name = 'platform-access-listener' and datname = current_database() and query ilike 'listen%'",
    );
  }
  assert.is(listening.length, 1, 'listening again');
  await new Promise((r) => setTimeout(r, 200));
  assert.ok((await invalidations(s)) >= before + 2, 'dropped when lost, and again once listening');
});

test.run();
