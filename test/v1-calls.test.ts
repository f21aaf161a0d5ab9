// The calls only v1 has, over real HTTP: advisory writes and events, vulnerability reports, registration; and
// v1 writes keep v2's rules (create steps, no escalation).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runScript } from './support/process.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;
const roleUid: Record<string, string> = {};

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
  for (const r of (await s.call('GET', '/iam/v2/roles?uidp.in_root=true&page_size=200')).body.roles)
    roleUid[r.name] = r.uid;
});
test.after(async () => s.stop());

/** A token of a new identity bound to a built-in role in the organization. */
async function tokenAs(role: string): Promise<string> {
  const id = (await s.call('POST', `/iam/v2/identities/${org}`, { name: `as ${role} ${Math.random()}` })).body.uid;
  const bound = await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: id, roleUid: roleUid[role] });
  assert.is(bound.status, 200, JSON.stringify(bound.body));
  return s.mint(id);
}

const advisory = {
  advisoryId: 'CGA-v1v1-abcd-0001',
  author: 'alice@example.dev',
  artifactName: 'nginx',
  artifactType: 'image',
  artifactArchitecture: 'amd64',
  componentName: 'zlib',
  componentType: 'apk',
  componentLocation: '/lib/apk/db/installed',
  legacyAdvisoryID: 'GHSA-old',
  aliases: ['CVE-2026-0001'],
};

test('advisories: v1 creates with {parentId, advisory}, v2 reads it with v2 names', async () => {
  const created = await s.call('POST', '/vulnerabilities/v1/advisories', { parentId: org, advisory });
  assert.is(created.status, 200, JSON.stringify(created.body));
  assert.match(created.body.id, new RegExp(`^${org}/[0-9a-f]{16}$`));
  assert.is(created.body.legacyAdvisoryID, 'GHSA-old');
  assert.ok(created.body.createdAt && created.body.updatedAt);
  const v2 = (await s.call('GET', `/vulnerabilities/v2/advisories/${created.body.id}`)).body;
  assert.is(v2.legacyAdvisoryId, 'GHSA-old');
  assert.is(v2.createTime, created.body.createdAt);

  const listed = await s.call(
    'GET',
    `/vulnerabilities/v1/advisories?artifactName=nginx&advisoryIds=${advisory.advisoryId}`,
  );
  assert.equal(
    listed.body.items.map((a: any) => a.id),
    [created.body.id],
  );
  assert.is(listed.body.totalCount, '1');
});

test('advisories: v1 pages with pageSize and pageToken, and counts the total', async () => {
  for (let i = 0; i < 3; i++)
    await s.call('POST', '/vulnerabilities/v1/advisories', {
      parentId: org,
      advisory: { ...advisory, advisoryId: `CGA-page-abcd-000${i}`, componentName: 'paged' },
    });
  const seen: string[] = [];
  let token = '';
  do {
    const page = await s.call(
      'GET',
      `/vulnerabilities/v1/advisories?componentName=paged&pageSize=2${token ? `&pageToken=${token}` : ''}`,
    );
    assert.is(page.status, 200, JSON.stringify(page.body));
    assert.ok(page.body.items.length <= 2);
    assert.is(page.body.totalCount, '3');
    seen.push(...page.body.items.map((a: any) => a.advisoryId));
    token = page.body.nextPageToken;
  } while (token);
  assert.equal(seen.sort(), ['CGA-page-abcd-0000', 'CGA-page-abcd-0001', 'CGA-page-abcd-0002']);
});

test('advisory events: appended with ids under the advisory, listed, replaced by id; v2 sees them in the advisory', async () => {
  const a = (
    await s.call('POST', '/vulnerabilities/v1/advisories', {
      parentId: org,
      advisory: { ...advisory, advisoryId: 'CGA-evts-abcd-0001' },
    })
  ).body;
  const first = await s.call('POST', `/vulnerabilities/v1/advisories/${a.id}/events`, {
    advisoryEvent: { author: 'scanner', status: 'PENDING', detection: { manual: {} } },
  });
  assert.is(first.status, 200, JSON.stringify(first.body));
  assert.is(first.body.id, `${a.id}/0000000000000000`);
  assert.is(first.body.status, 'PENDING');
  assert.ok(first.body.timestamp);
  const second = await s.call('POST', `/vulnerabilities/v1/advisories/${a.id}/events`, {
    advisoryEvent: { author: 'alice', status: 'APPROVED', fixed: { fixedVersion: '1.3.1-r0' } },
  });
  assert.is(second.body.id, `${a.id}/0000000000000001`);

  const replaced = await s.call('PUT', `/vulnerabilities/v1/advisory_events/${first.body.id}`, {
    author: 'scanner',
    reviewer: 'bob',
    status: 'REJECTED',
  });
  assert.is(replaced.status, 200, JSON.stringify(replaced.body));
  assert.equal([replaced.body.status, replaced.body.reviewer, replaced.body.detection], ['REJECTED', 'bob', undefined]);
  assert.is(replaced.body.timestamp, first.body.timestamp, 'a replaced event keeps its time');

  const listed = await s.call('GET', `/vulnerabilities/v1/advisories/${a.id}/events`);
  assert.equal(
    listed.body.items.map((e: any) => [e.id, e.status]),
    [
      [first.body.id, 'REJECTED'],
      [second.body.id, 'APPROVED'],
    ],
  );
  assert.is(listed.body.parentId, a.id);
  const v2 = (await s.call('GET', `/vulnerabilities/v2/advisories/${a.id}`)).body;
  assert.equal(
    v2.events.map((e: any) => e.reviewState),
    ['REVIEW_STATE_REJECTED', 'REVIEW_STATE_APPROVED'],
  );
  assert.is(v2.events[1].fixed.fixedVersion, '1.3.1-r0');
});

test('advisory events: concurrent appends all land', async () => {
  const a = (
    await s.call('POST', '/vulnerabilities/v1/advisories', {
      parentId: org,
      advisory: { ...advisory, advisoryId: 'CGA-race-abcd-0001' },
    })
  ).body;
  const replies = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      s.call('POST', `/vulnerabilities/v1/advisories/${a.id}/events`, {
        advisoryEvent: { author: `a${i}`, status: 'PENDING' },
      }),
    ),
  );
  assert.ok(
    replies.every((r) => r.status === 200),
    JSON.stringify(replies.map((r) => r.body)),
  );
  assert.is(new Set(replies.map((r) => r.body.id)).size, 12);
  assert.is((await s.call('GET', `/vulnerabilities/v1/advisories/${a.id}/events`)).body.items.length, 12);
});

test('advisories: PUT replaces (events too), DELETE removes; bad input is a v1 error that changes nothing', async () => {
  const a = (
    await s.call('POST', '/vulnerabilities/v1/advisories', {
      parentId: org,
      advisory: { ...advisory, advisoryId: 'CGA-putd-abcd-0001' },
    })
  ).body;
  await s.call('POST', `/vulnerabilities/v1/advisories/${a.id}/events`, {
    advisoryEvent: { author: 'x', status: 'PENDING' },
  });

  const badStatus = await s.call('POST', `/vulnerabilities/v1/advisories/${a.id}/events`, {
    advisoryEvent: { author: 'x', status: 'MAYBE' },
  });
  assert.is(badStatus.status, 400);
  assert.match(badStatus.body.message, /status must be one of UNKNOWN, PENDING/);
  assert.equal(badStatus.body.details, []);
  assert.is(
    (
      await s.call('PUT', `/vulnerabilities/v1/advisory_events/${a.id}/00000000000000ff`, {
        author: 'x',
        status: 'PENDING',
      })
    ).status,
    404,
  );
  assert.is((await s.call('POST', '/vulnerabilities/v1/advisories', { advisory })).status, 400, 'no parentId');
  assert.is(
    (await s.call('POST', '/vulnerabilities/v1/advisories', { parentId: `${org}/0123456789abcdef`, advisory })).status,
    404,
    'no such group',
  );
  const missing = await s.call('POST', '/vulnerabilities/v1/advisories', { parentId: org, advisory: { author: 'x' } });
  assert.is(missing.status, 400);
  assert.match(missing.body.message, /advisoryId is required/);
  assert.is((await s.call('GET', `/vulnerabilities/v1/advisories/${a.id}/events`)).body.items.length, 1);

  const { id: _id, createdAt: _c, updatedAt: _u, events: _e, aliases: _a, ...kept } = a;
  const put = await s.call('PUT', `/vulnerabilities/v1/advisories/${a.id}`, {
    ...kept,
    componentLocation: '/elsewhere',
  });
  assert.is(put.status, 200, JSON.stringify(put.body));
  const v2 = (await s.call('GET', `/vulnerabilities/v2/advisories/${a.id}`)).body;
  assert.equal([v2.componentLocation, v2.aliases, v2.events], ['/elsewhere', undefined, undefined]);

  assert.equal((await s.call('DELETE', `/vulnerabilities/v1/advisories/${a.id}`)).body, {});
  assert.is((await s.call('GET', `/vulnerabilities/v2/advisories/${a.id}`)).status, 404);
});

test('advisories: writing takes the advisories capabilities; a viewer reads but cannot write', async () => {
  const viewer = { authorization: `Bearer ${await tokenAs('viewer')}` };
  assert.is((await s.call('POST', '/vulnerabilities/v1/advisories', { parentId: org, advisory }, viewer)).status, 403);
  const listed = await s.call('GET', '/vulnerabilities/v1/advisories?pageSize=1', undefined, viewer);
  assert.is(listed.status, 200);
  assert.is(listed.body.items.length, 1);
  const owner = { authorization: `Bearer ${await tokenAs('owner')}` };
  assert.is(
    (await s.call('POST', '/vulnerabilities/v1/advisories', { parentId: org, advisory }, owner)).status,
    403,
    'owner is not an advisories author',
  );
});

test('vulnerability reports: the latest for a digest, lists by repo or digest, count reports', async () => {
  for (const name of ['nginx', 'python']) await s.call('POST', `/registry/v2/repos/${org}`, { name });
  const imported = await runScript(
    'scripts/import.ts',
    ['vulnReports', 'samples/vulnReports.json', '--parent', org],
    s.env,
  );
  assert.is(imported.status, 0, imported.stderr);
  const nginx = (await s.call('GET', `/registry/v2/repos?name=nginx&uidp.children_of=${org}`)).body.repos[0].uid;
  const digest = 'sha256:6515f83e7ba5810842059cf6b2b7279a3073b9d141623e62cc825050025113e0';

  const latest = await s.call('GET', `/registry/v1/repos/${nginx}/digests/${digest}/vulnreport`);
  assert.is(latest.status, 200, JSON.stringify(latest.body));
  assert.is(latest.body.reportGeneration, '2026-11-05T11:00:00.000Z');
  assert.equal(latest.body.scanner, { name: 'TRIVY', version: '0.52.0' });
  assert.equal(
    latest.body.vulnerabilityMatches.map((m: any) => [m.vulnerability.id, m.pkg.name, m.fix.state]),
    [
      ['CVE-2024-7347', 'nginx', 'FIXED'],
      ['CVE-2025-0001', 'zlib', 'NOT_FIXED'],
    ],
  );
  assert.is(
    (await s.call('GET', `/registry/v1/repos/${nginx}/digests/sha256:${'0'.repeat(64)}/vulnreport`)).status,
    404,
  );

  const byRepo = await s.call('GET', `/registry/v1/vuln_reports?repoId=${nginx}&scanner.name=GRYPE`);
  assert.equal(
    byRepo.body.items.map((r: any) => r.createdAt),
    ['2026-11-10T10:00:00.000Z', '2026-11-05T10:00:00.000Z', '2026-11-01T10:00:00.000Z'],
  );
  const byDigest = await s.call('GET', `/registry/v1/vuln_reports?digest=${digest}&createdSince=2026-11-05T10:30:00Z`);
  assert.equal(
    byDigest.body.items.map((r: any) => r.scanner.name),
    ['TRIVY'],
  );
  assert.equal(byDigest.body.items[0].vulnerabilities[1].severity, 'NEGLIGIBLE');

  const counts = await s.call('GET', '/registry/v1/vuln_reports/counts?repo=python');
  assert.is(counts.status, 200, JSON.stringify(counts.body));
  assert.is(counts.body.items.length, 1);
  const [python] = counts.body.items;
  assert.equal([python.repo, python.tag, python.sizeBytes], ['python', '3.12', '31457280']);
  assert.equal(python.critCveIds, ['CVE-2024-45490']);
  assert.equal(python.highCveIds, ['CVE-2024-6232']);
  assert.equal(python.vulnCounts, [
    { severity: 'CRITICAL', count: 1 },
    { severity: 'HIGH', count: 1 },
    { severity: 'LOW', count: 1 },
    { severity: 'UNKNOWN', count: 1 },
  ]);
  const window = await s.call(
    'GET',
    '/registry/v1/vuln_reports/counts?repo=nginx&from=2026-11-02T00:00:00Z&to=2026-11-06T00:00:00Z',
  );
  assert.equal(
    window.body.items.map((c: any) => c.date),
    ['2026-11-05T11:00:00.000Z', '2026-11-05T10:00:00.000Z'],
  );
  assert.equal((await s.call('GET', '/registry/v1/vuln_reports/counts?repo=no-such-repo')).body, { items: [] });
});

test('vulnerability reports: bad parameters are 400s; callers without the capability see nothing', async () => {
  for (const [query, field] of [
    ['', 'repoId'],
    ['?repoId=x&color=red', 'color'],
    ['?digest=d&createdSince=yesterday', 'createdSince'],
  ]) {
    const r = await s.call('GET', `/registry/v1/vuln_reports${query}`);
    assert.is(r.status, 400, query);
    assert.match(r.body.message, new RegExp(field));
  }
  assert.is((await s.call('GET', '/registry/v1/vuln_reports/counts?from=soon')).status, 400);
  const nobody = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'no roles' })).body.uid;
  const as = { authorization: `Bearer ${await s.mint(nobody)}` };
  const nginx = (await s.call('GET', `/registry/v2/repos?name=nginx&uidp.children_of=${org}`)).body.repos[0].uid;
  assert.is(
    (await s.call('GET', `/registry/v1/repos/${nginx}/digests/sha256:${'0'.repeat(64)}/vulnreport`, undefined, as))
      .status,
    403,
  );
  assert.equal((await s.call('GET', '/registry/v1/vuln_reports/counts?repo=nginx', undefined, as)).body, { items: [] });
  const puller = { authorization: `Bearer ${await tokenAs('registry.pull')}` };
  const digest = 'sha256:6515f83e7ba5810842059cf6b2b7279a3073b9d141623e62cc825050025113e0';
  assert.is(
    (await s.call('GET', `/registry/v1/repos/${nginx}/digests/${digest}/vulnreport`, undefined, puller)).status,
    200,
    'registry.pull reads an image report',
  );
});

test('register: an invite code made through v1 binds the caller; identityId must be the caller', async () => {
  const invite = await s.call('POST', `/iam/v1/group_invites/${org}`, { role: roleUid.viewer, ttl: '3600s' });
  assert.is(invite.status, 200, JSON.stringify(invite.body));
  assert.match(invite.body.code ?? '', /^[0-9a-f]{16}\./, 'v1 create runs the same create step as v2');
  assert.ok(invite.body.expiration);
  const newcomer = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'newcomer' })).body.uid;
  const as = { authorization: `Bearer ${await s.mint(newcomer)}` };
  const mismatch = await s.call(
    'POST',
    '/auth/v1/register',
    { code: invite.body.code, identityId: s.bootstrap.owner },
    as,
  );
  assert.is(mismatch.status, 400);
  const registered = await s.call('POST', '/auth/v1/register', { code: invite.body.code, identityId: newcomer }, as);
  assert.equal([registered.status, registered.body], [200, { identity: newcomer, group: org }]);
  const bindings = (await s.call('GET', `/iam/v2/roleBindings?uidp.children_of=${org}&page_size=200`)).body
    .roleBindings;
  assert.ok(bindings.some((b: any) => b.identityUid === newcomer && b.roleUid === roleUid.viewer));
  assert.is((await s.call('GET', '/registry/v2/repos?page_size=1', undefined, as)).status, 200);
  assert.is((await s.call('POST', '/auth/v1/register', { code: 'abc.def' }, as)).status, 404);
  assert.is((await s.call('POST', '/auth/v1/register', {}, { authorization: '' })).status, 401);
  assert.equal((await s.call('POST', '/auth/v1/register', {}, as)).body, { identity: newcomer });
});

test('v1 role bindings cannot escalate: binding a role takes holding its capabilities', async () => {
  const binder = (
    await s.call('POST', `/iam/v2/roles/${org}`, {
      name: 'binder',
      capabilities: ['CAP_IAM_ROLE_BINDINGS_CREATE', 'CAP_IAM_GROUPS_LIST'],
    })
  ).body.uid;
  const id = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'binder' })).body.uid;
  await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: id, roleUid: binder });
  const as = { authorization: `Bearer ${await s.mint(id)}` };
  const escalate = await s.call('POST', `/iam/v1/rolebindings/${org}`, { identity: id, role: roleUid.owner }, as);
  assert.is(escalate.status, 403, JSON.stringify(escalate.body));
  assert.is((await s.call('POST', `/iam/v1/rolebindings/${org}`, { identity: id, role: binder }, as)).status, 200);
});

test.run();
