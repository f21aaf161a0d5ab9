// What a request may say and how it is read: contains filters match text literally; a custom method the API
// does not serve is not found, on every path that ends in a uid.
import { writeFileSync } from 'node:fs';
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

test('a contains filter matches %, _ and \\ as themselves, not as wildcards', async () => {
  const names = ['under_score', 'underXscore', '100%', '1000', 'back\\slash', 'backXslash'];
  const file = join(s.dataDir, 'wildcards.ndjson');
  writeFileSync(file, names.map((name) => JSON.stringify({ name, ecosystem: 'ECOSYSTEM_PYTHON' })).join('\n'));
  const imported = await runScript('scripts/import.ts', ['artifacts', file], { DATA_DIR: s.dataDir });
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
  assert.ok(r.body.details.some((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo' && d.reason === 'NOT_FOUND'), what);
}

test('a custom method we do not serve is NOT_FOUND, not a create, get, update or delete of "<uid>:<verb>"', async () => {
  assertNoRoute(await s.call('POST', `/iam/v2/groups/${org}:requestGroupAccess`, {}), 'requestGroupAccess');
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'verbs' });
  const openapi = (await s.call('GET', '/openapi.json')).body;
  let tried = 0;
  for (const [path, methods] of Object.entries<Record<string, unknown>>(openapi.paths)) {
    if (!/\{(uid|parent)\}$/.test(path)) continue;
    const uid = path.startsWith('/iam/v2/groups') ? org : repo.uid;
    for (const method of Object.keys(methods)) {
      const url = `${path.replace(/\{(uid|parent)\}$/, uid)}:unknownVerb`;
      assertNoRoute(await s.call(method.toUpperCase(), url, method === 'get' || method === 'delete' ? undefined : {}), `${method} ${url}`);
      tried++;
    }
  }
  assert.ok(tried >= 40, `every create, get, update and delete route was tried (${tried})`);
  for (const method of ['POST', 'PUT', 'DELETE']) {
    assertNoRoute(await s.call(method, `/registry/v1/repos/${repo.uid}:unknownVerb`, method === 'DELETE' ? undefined : {}), `v1 ${method}`);
  }
  assertNoRoute(await s.call('PUT', `/vulnerabilities/v1/advisory_events/${org}/0000000000000000:unknownVerb`, {}), 'v1 advisory event');
});

test('the custom methods we serve still answer, and a uid still reaches its record', async () => {
  const lookup = await s.call('GET', '/iam/v2/identities:lookupIdentity?issuer=x');
  assert.is(lookup.status, 400, 'lookupIdentity runs and wants its subject');
  assert.equal(lookup.body.details.find((d: any) => d.fieldViolations)?.fieldViolations.map((v: any) => v.field), ['subject']);
  const accept = await s.call('POST', '/iam/v2/groupInvites:accept', { code: 'not-a-code' });
  assert.is(accept.status, 404, 'groupInvites:accept runs and finds no such invite');
  assert.not.match(accept.body.message, /no route/);
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'still-found' });
  assert.is((await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body.name, 'still-found');
  assert.is((await s.call('GET', `/registry/v2/repos/${encodeURIComponent(repo.uid)}`)).body.name, 'still-found');
});

test.run();
