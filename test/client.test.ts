// The typed client generated from the spec (generated/client/, engine client/engine.ts) against a real server:
// a method per operation, every page of a list as an async iterator, AIP-193 errors as typed objects, retries
// of UNAVAILABLE. Wrong requests do not compile (the @ts-expect-error lines are checked by tsc in npm test).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiCallError, createClient, type PlatformClient } from '../generated/client/index.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let client: PlatformClient;
let org: string;

/** The error a call fails with; a call that succeeds fails the test. */
const failure = (call: Promise<unknown>): Promise<ApiCallError> =>
  call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (e: unknown) => {
      if (!(e instanceof ApiCallError)) throw e;
      return e;
    },
  );

test.before(async () => {
  s = await startTestServer();
  client = createClient({ baseUrl: s.url, token: s.token });
  org = await createOrg(s, 'client');
});
test.after(async () => s.stop());

test('create, get, update with a mask, list and delete through the typed methods', async () => {
  const team = await client.iam.createGroup({ parent: org, body: { name: 'team', description: 'first' } });
  assert.is(team.name, 'team');
  assert.equal(await client.iam.getGroup({ uid: team.uid }), team);
  const updated = await client.iam.updateGroup({
    uid: team.uid,
    body: { description: 'second', name: 'ignored by the mask' },
    updateMask: 'description',
  });
  assert.equal([updated.name, updated.description], ['team', 'second']);
  const page = await client.iam.listGroups({ 'uidp.children_of': org, pageSize: 10 });
  assert.equal(
    page.groups.map((g) => g.uid),
    [team.uid],
  );
  assert.is(page.totalCount, '1');
  await client.iam.deleteGroup({ uid: team.uid });
  assert.is((await client.iam.listGroups({ 'uidp.children_of': org })).totalCount, '0');
  // @ts-expect-error a create without its required name does not compile
  await client.iam.createGroup({ parent: org, body: { description: 'no name' } }).catch(() => undefined);
  // @ts-expect-error nor does an unknown field
  await client.registry.createRepo({ parent: org, body: { name: 'x', colour: 'red' } }).catch(() => undefined);
});

test('listAll walks every page of a list, following nextPageToken to the end', async () => {
  const made: string[] = [];
  for (let i = 0; i < 7; i++)
    made.push((await client.registry.createRepo({ parent: org, body: { name: `repo-${i}` } })).uid);
  const seen: string[] = [];
  for await (const repo of client.registry.listAllRepos({ 'uidp.children_of': org, pageSize: 3 })) seen.push(repo.uid);
  assert.equal(seen, [...made].sort());
  for (const uid of made) await client.registry.deleteRepo({ uid });
});

test('errors are ApiCallError objects with the code, status, reason and details of the answer', async () => {
  const missing = `${org}/0123456789abcdef`;
  const notFound = await failure(client.iam.getGroup({ uid: missing }));
  assert.equal([notFound.status, notFound.code, notFound.reason], [404, 5, 'NOT_FOUND']);
  assert.ok(notFound.detail('ResourceInfo'), JSON.stringify(notFound.details));
  const invalid = await failure(client.registry.createRepo({ parent: org, body: { name: 'Not A Valid Name!' } }));
  assert.is(invalid.code, 3);
  assert.ok(invalid.detail('BadRequest'), JSON.stringify(invalid.details));
  const anonymous = createClient({ baseUrl: s.url });
  const refused = await failure(anonymous.iam.listGroups());
  assert.equal([refused.status, refused.reason], [401, 'UNAUTHENTICATED']);
});

test('an UNAVAILABLE answer is retried when asked, honouring Retry-After; otherwise it is thrown', async () => {
  let unavailable = 0;
  const flaky = (async (input: string | URL | Request, init?: RequestInit) => {
    if (unavailable++ === 0)
      return new Response(JSON.stringify({ code: 14, message: 'Unavailable: try again', details: [] }), {
        status: 503,
        headers: { 'retry-after': '1' },
      });
    return fetch(input, init);
  }) as typeof fetch;
  const started = performance.now();
  const retried = createClient({ baseUrl: s.url, token: s.token, retries: 2, fetch: flaky });
  assert.is((await retried.ping.ping({})).response, 'pong');
  assert.ok(performance.now() - started >= 900, 'waited for Retry-After');
  unavailable = 0;
  const once = createClient({ baseUrl: s.url, token: () => s.token, fetch: flaky });
  const thrown = await failure(once.ping.ping({}));
  assert.equal([thrown.status, thrown.code], [503, 14]);
});

test.run();
