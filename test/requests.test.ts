// What a request may say and how it is read: a query parameter a call does not take is refused by name on every
// route, v2 and v1; every list parameter of the reference contract is served or refused as unsupported; contains
// filters match text literally; a custom method the API does not serve is not found.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runScript } from './support/process.js';
import { createOrg, startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;

test.before(async () => {
  s = await startTestServer();
  org = await createOrg(s);
});
test.after(async () => s.stop());

function violations(r: Reply): { field: string; description: string }[] {
  return r.body.details?.find((d: any) => d.fieldViolations)?.fieldViolations ?? [];
}

function assertRefusedParameter(r: Reply, name: string, why: RegExp, what: string) {
  assert.is(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, 3, what);
  const v = violations(r).find((x) => x.field === name);
  assert.ok(v, `${what}: no violation names ${name}: ${JSON.stringify(r.body)}`);
  assert.match(v!.description, why, what);
}

const notAParameter = /is not a parameter of this call/;

test('an unknown query parameter is refused by name on every v2 route, whatever else the request says', async () => {
  const openapi = (await s.call('GET', '/openapi.json')).body;
  let tried = 0;
  for (const [path, methods] of Object.entries<Record<string, unknown>>(openapi.paths)) {
    const url = path.replace('{digest}', `sha256:${'0'.repeat(64)}`).replace(/\{\w+\}/g, org);
    for (const method of Object.keys(methods)) {
      const body = method === 'get' || method === 'delete' ? undefined : {};
      assertRefusedParameter(
        await s.call(method.toUpperCase(), `${url}?nme=x`, body),
        'nme',
        notAParameter,
        `${method} ${path}`,
      );
      tried++;
    }
  }
  assert.ok(tried >= 70, `every route of the OpenAPI document (${tried})`);
  assertRefusedParameter(
    await s.call('POST', '/sts/exchange?identity=x&scope=y'),
    'scope',
    /scope is not supported by this server/,
    "the token exchange: the reference's scope, not served",
  );
});

test('a misspelled filter no longer lists everything', async () => {
  for (const name of ['mirror', 'nginx']) await s.call('POST', `/registry/v2/repos/${org}`, { name });
  assert.equal(
    (await s.call('GET', '/registry/v2/repos?name=nginx')).body.repos.map((r: any) => r.name),
    ['nginx'],
  );
  assertRefusedParameter(
    await s.call('GET', '/registry/v2/repos?nmae=nginx'),
    'nmae',
    notAParameter,
    'a misspelled filter',
  );
  assertRefusedParameter(
    await s.call('GET', '/registry/v2/repos?page_szie=1'),
    'page_szie',
    notAParameter,
    'a misspelled page size',
  );
});

test('v1 refuses unknown parameters too: lists, writes and its own calls', async () => {
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'v1-params' });
  const calls: [string, string, unknown?][] = [
    ['GET', '/registry/v1/repos?nme=x'],
    ['POST', `/registry/v1/repos/${org}?nme=x`, { name: 'made-in-v1' }],
    ['PUT', `/registry/v1/repos/${repo.uid}?nme=x`, { name: 'v1-params' }],
    ['DELETE', `/registry/v1/repos/${repo.uid}?nme=x`],
    ['GET', '/registry/v1/eoltags?nme=x'],
    ['GET', '/registry/v1/vuln_reports?repoId=x&nme=x'],
    ['GET', `/registry/v1/repos/${repo.uid}/digests/sha256:${'0'.repeat(64)}/vulnreport?nme=x`],
    ['GET', `/vulnerabilities/v1/advisories?nme=x`],
    ['GET', `/vulnerabilities/v1/advisories/${org}/events?nme=x`],
    ['POST', '/auth/v1/register?nme=x', {}],
  ];
  for (const [method, url, body] of calls) {
    const r = await s.call(method, url, body);
    assert.is(r.status, 400, `${method} ${url}: ${JSON.stringify(r.body)}`);
    assert.match(r.body.message, /nme/, `${method} ${url}`);
  }
  assert.is(
    (await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body.name,
    'v1-params',
    'the refused PUT and DELETE changed nothing',
  );
  const paged = await s.call('GET', '/registry/v1/repos?pageSize=1');
  assert.is(paged.status, 400, 'a v1 list that answers every match refuses a page size instead of ignoring it');
  assert.match(paged.body.message, /pageSize/);
});

test('every query parameter the reference declares for a read we serve is served, or refused by name as not supported', async () => {
  const reference = JSON.parse(readFileSync('test/facts/api-v2.json', 'utf8'));
  const shape = (path: string) => path.replace(/\{\w+\}/g, '{}');
  const ours = new Set(
    Object.entries<any>((await s.call('GET', '/openapi.json')).body.paths)
      .filter(([, item]) => item.get)
      .map(([path]) => shape(path)),
  );
  const sample = (schema: any): string => {
    const one = schema.type === 'array' ? schema.items : schema;
    return (
      one.enum?.[0] ??
      (one.type === 'boolean'
        ? 'true'
        : one.type === 'integer'
          ? '1'
          : one.format === 'date-time'
            ? '2026-01-01T00:00:00Z'
            : 'x')
    );
  };
  let served = 0;
  let refused = 0;
  for (const [path, item] of Object.entries<any>(reference.paths)) {
    if (!item.get || !ours.has(shape(path))) continue;
    for (const p of (item.get.parameters ?? []).filter((x: any) => x.in === 'query')) {
      const r = await s.call(
        'GET',
        `${path.replace(/\{\w+\}/g, org)}?${encodeURIComponent(p.name)}=${encodeURIComponent(sample(p.schema))}`,
      );
      const mine = violations(r).find((v) => v.field === p.name);
      if (mine && /not supported/.test(mine.description)) {
        refused++;
        continue;
      }
      // Served: whatever the answer (a sample value may not fit, a record may not exist), the name is known.
      assert.not.ok(
        mine && notAParameter.test(mine.description),
        `${path}?${p.name} is declared by the reference but unknown here`,
      );
      served++;
    }
  }
  assert.ok(served > 100 && refused >= 15, `served ${served}, refused ${refused}`);
  assertRefusedParameter(
    await s.call('GET', '/registry/v2/tags?includeReferrers=true'),
    'includeReferrers',
    /not supported by this server/,
    'an unserved filter',
  );
});

test('roleBindings?group and identities?relationshipType are served', async () => {
  const team = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'team' })).body.uid;
  const roles = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles;
  const claim = (
    await s.call('POST', `/iam/v2/identities/${org}`, {
      name: 'by claim',
      claimMatch: { issuer: 'https://issuer.example', subject: 'me' },
    })
  ).body;
  const principal = (
    await s.call('POST', `/iam/v2/identities/${org}`, {
      name: 'by principal',
      servicePrincipal: 'SERVICE_PRINCIPAL_INGESTER',
    })
  ).body;
  const plain = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'plain' })).body;
  const inOrg = (await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: claim.uid, roleUid: roles[0].uid }))
    .body;
  const inTeam = (
    await s.call('POST', `/iam/v2/roleBindings/${team}`, { identityUid: principal.uid, roleUid: roles[0].uid })
  ).body;
  const bindings = async (query: string) =>
    (await s.call('GET', `/iam/v2/roleBindings?${query}`)).body.roleBindings.map((b: any) => b.uid);
  assert.equal(await bindings(`group=${team}`), [inTeam.uid]);
  assert.ok((await bindings(`group=${org}`)).includes(inOrg.uid));
  assert.not.ok((await bindings(`group=${org}`)).includes(inTeam.uid), 'only bindings in that group, not below it');
  const identities = async (type: string) =>
    (await s.call('GET', `/iam/v2/identities?uidp.children_of=${org}&relationshipType=${type}`)).body.identities.map(
      (i: any) => i.uid,
    );
  assert.equal(await identities('RELATIONSHIP_TYPE_CLAIM_MATCH'), [claim.uid]);
  assert.equal(await identities('RELATIONSHIP_TYPE_SERVICE_PRINCIPAL'), [principal.uid]);
  assert.equal(await identities('RELATIONSHIP_TYPE_STATIC'), []);
  const all = await identities('RELATIONSHIP_TYPE_UNSPECIFIED');
  for (const uid of [claim.uid, principal.uid, plain.uid])
    assert.ok(all.includes(uid), 'UNSPECIFIED matches every identity');
  assertRefusedParameter(
    await s.call('GET', '/iam/v2/identities?relationshipType=CLAIM'),
    'relationshipType',
    /must be one of/,
    'an unknown relationship type',
  );
});

test("externalGroupRoleMappings?identityProviderUid, and v1's identityProviderUidp", async () => {
  const role = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const provider = async (name: string) =>
    (
      await s.call('POST', `/iam/v2/identityProviders/${org}`, {
        name,
        defaultRole: role,
        oidc: { issuer: 'https://idp.example', clientId: name },
      })
    ).body.uid;
  const [a, b] = [await provider('idp-a'), await provider('idp-b')];
  const mapping = async (idp: string, group: string) =>
    (await s.call('POST', `/iam/v2/externalGroupRoleMappings/${idp}`, { externalGroupId: group, roleUid: role })).body
      .uid;
  const [ma, mb] = [await mapping(a, 'admins'), await mapping(b, 'devs')];
  assert.equal(
    (
      await s.call('GET', `/iam/v2/externalGroupRoleMappings?identityProviderUid=${a}`)
    ).body.externalGroupRoleMappings.map((m: any) => m.uid),
    [ma],
  );
  assert.equal(
    (
      await s.call('GET', `/iam/v2/externalGroupRoleMappings?identityProviderUid=${b}`)
    ).body.externalGroupRoleMappings.map((m: any) => m.uid),
    [mb],
  );
  assert.equal(
    (await s.call('GET', `/iam/v1/externalGroupRoleMappings?identityProviderUidp=${b}`)).body.items.map(
      (m: any) => m.id,
    ),
    [mb],
  );
});

test('the standard list parameters work in snake_case and camelCase alike', async () => {
  for (const name of ['alpha', 'beta', 'gamma'])
    await s.call('POST', `/registry/v2/repos/${org}`, { name: `case-${name}` });
  const list = async (query: string) => {
    const r = await s.call('GET', `/registry/v2/repos?${query}`);
    assert.is(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
    // A page token carries its issue time: compare whether there is one.
    return { ...r.body, nextPageToken: r.body.nextPageToken !== '' };
  };
  for (const [snake, camel] of [
    ['page_size', 'pageSize'],
    ['uidp.descendants_of', 'uidp.descendantsOf'],
    ['uidp.children_of', 'uidp.childrenOf'],
  ]) {
    const value = snake === 'page_size' ? '2' : org;
    assert.equal(await list(`${camel}=${value}&order_by=name`), await list(`${snake}=${value}&order_by=name`), camel);
  }
  assert.equal(await list('pageSize=1&orderBy=name%20desc'), await list('page_size=1&order_by=name%20desc'));
  const token = encodeURIComponent(
    (await s.call('GET', '/registry/v2/repos?page_size=1&order_by=name%20desc')).body.nextPageToken,
  );
  const second = await list(`pageSize=1&orderBy=name%20desc&pageToken=${token}`);
  assert.equal(second, await list(`page_size=1&order_by=name%20desc&page_token=${token}`));
  assert.is(second.repos.length, 1);
  assert.equal((await list('uidp.inRoot=true')).repos, [], 'repos are never root records');
  const repo = (await list('name=case-alpha')).repos[0];
  for (const mask of ['update_mask', 'updateMask']) {
    const r = await s.call('PATCH', `/registry/v2/repos/${repo.uid}?${mask}=description`, {
      description: mask,
      name: 'ignored-by-the-mask',
    });
    assert.equal([r.body.description, r.body.name], [mask, 'case-alpha'], mask);
  }
});

test('a contains filter matches %, _ and \\ as themselves, not as wildcards', async () => {
  const names = ['under_score', 'underXscore', '100%', '1000', 'back\\slash', 'backXslash'];
  const file = join(s.dataDir, 'wildcards.ndjson');
  writeFileSync(file, names.map((name) => JSON.stringify({ name, ecosystem: 'ECOSYSTEM_PYTHON' })).join('\n'));
  const imported = await runScript('scripts/import.ts', ['artifacts', file], s.env);
  assert.is(imported.status, 0, imported.stderr);
  const search = async (query: string) => {
    const r = await s.call('GET', `/libraries/v2/artifacts?query=${encodeURIComponent(query)}`);
    assert.is(r.status, 200, JSON.stringify(r.body));
    return r.body.artifacts.map((a: any) => a.name).sort();
  };
  assert.equal(await search('_'), ['under_score']);
  assert.equal(await search('r_s'), ['under_score']);
  assert.equal(await search('%'), ['100%']);
  assert.equal(await search('0%'), ['100%']);
  assert.equal(await search('\\'), ['back\\slash']);
  assert.equal(await search('score'), ['underXscore', 'under_score'], 'plain text still matches anywhere in the name');
  assert.equal(await search('SCORE'), ['underXscore', 'under_score'], 'and ignores case');
});

function assertNoRoute(r: Reply, what: string) {
  assert.is(r.status, 404, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, 5, what);
  assert.match(r.body.message, /no route/, what);
  // v1 answers errors in its own shape, without typed details.
  if (!what.startsWith('v1'))
    assert.ok(
      r.body.details.some(
        (d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo' && d.reason === 'NOT_FOUND',
      ),
      what,
    );
}

test('a custom method we do not serve is NOT_FOUND, not a create, get, update or delete of "<uid>:<verb>"', async () => {
  assertNoRoute(await s.call('POST', `/iam/v2/groups/${org}:leaveGroup`, {}), 'a verb no spec declares');
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'verbs' });
  const openapi = (await s.call('GET', '/openapi.json')).body;
  let tried = 0;
  for (const [path, methods] of Object.entries<Record<string, unknown>>(openapi.paths)) {
    if (!/\{(uid|parent)\}$/.test(path)) continue;
    const uid = path.startsWith('/iam/v2/groups') ? org : repo.uid;
    for (const method of Object.keys(methods)) {
      const url = `${path.replace(/\{(uid|parent)\}$/, uid)}:unknownVerb`;
      assertNoRoute(
        await s.call(method.toUpperCase(), url, method === 'get' || method === 'delete' ? undefined : {}),
        `${method} ${url}`,
      );
      tried++;
    }
  }
  assert.ok(tried >= 40, `every create, get, update and delete route was tried (${tried})`);
  for (const method of ['POST', 'PUT', 'DELETE']) {
    assertNoRoute(
      await s.call(method, `/registry/v1/repos/${repo.uid}:unknownVerb`, method === 'DELETE' ? undefined : {}),
      `v1 ${method}`,
    );
  }
  assertNoRoute(
    await s.call('PUT', `/vulnerabilities/v1/advisory_events/${org}/0000000000000000:unknownVerb`, {}),
    'v1 advisory event',
  );
});

test('the custom methods we serve still answer, and a uid still reaches its record', async () => {
  const lookup = await s.call('GET', '/iam/v2/identities:lookupIdentity?issuer=x');
  assert.is(lookup.status, 400, 'lookupIdentity runs and wants its subject');
  assert.equal(
    lookup.body.details.find((d: any) => d.fieldViolations)?.fieldViolations.map((v: any) => v.field),
    ['subject'],
  );
  const accept = await s.call('POST', '/iam/v2/groupInvites:accept', { code: 'not-a-code' });
  assert.is(accept.status, 404, 'groupInvites:accept runs and finds no such invite');
  assert.not.match(accept.body.message, /no route/);
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'still-found' });
  assert.is((await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body.name, 'still-found');
  assert.is((await s.call('GET', `/registry/v2/repos/${encodeURIComponent(repo.uid)}`)).body.name, 'still-found');
});

test.run();
