// The reference's calls that need a system this server does not run (spec: `unimplemented:` on an endpoint, the
// account check; the token service's headless sessions): a structured UNIMPLEMENTED (501), after the capability and the
// request are checked as for any call, never a 404; in /openapi.json and the typed client like the others.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiCallError, createClient } from '../generated/client/index.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let association: string;

test.before(async () => {
  s = await startTestServer();
  const org = s.bootstrap.organization;
  association = (await s.call('POST', `/iam/v2/accountAssociations/${org}`, { name: 'cloud' })).body.uid;
});
test.after(async () => s.stop());

function unimplemented(r: Reply, what: RegExp) {
  assert.is(r.status, 501, JSON.stringify(r.body));
  assert.is(r.body.code, 12);
  assert.is(r.body.details[0].reason, 'UNIMPLEMENTED');
  assert.match(r.body.message, what);
}

test('the account check: 501 saying what is missing, once the caller may call it', async () => {
  unimplemented(
    await s.call('POST', `/iam/v2/accountAssociations/${association}:checkAccountAssociation`, {}),
    /credential exchange/,
  );
  const stranger = (await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'x' })).body.uid;
  const denied = await s.call(
    'POST',
    `/iam/v2/accountAssociations/${association}:checkAccountAssociation`,
    {},
    { authorization: `Bearer ${await s.mint(stranger)}` },
  );
  assert.is(denied.status, 403, 'the capability is checked first');
  const invalid = await s.call('POST', `/iam/v2/accountAssociations/${association}:checkAccountAssociation`, {
    providerType: 'NOPE',
  });
  assert.is(invalid.status, 400, 'the body is validated first');
});

test('the token service: headless sessions are 501, with or without a token', async () => {
  unimplemented(await s.call('GET', '/sts/headless_sessions?code=x', undefined, { authorization: '' }), /browser/);
});

test('declared like any call: in /openapi.json and in the typed client', async () => {
  const paths = Object.keys((await s.call('GET', '/openapi.json')).body.paths);
  assert.ok(
    paths.some((p) => p.endsWith(':checkAccountAssociation')),
    'documented',
  );
  const client = createClient({ baseUrl: s.url, token: s.token });
  const e = await client.iam.checkAccountAssociation({ uid: association, body: {} }).catch((x) => x);
  assert.ok(e instanceof ApiCallError);
  assert.equal([e.status, e.code, e.reason], [501, 12, 'UNIMPLEMENTED']);
});

test.run();
