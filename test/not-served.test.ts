// The reference's calls that need a system this server does not run (spec: `unimplemented:` on an endpoint; the
// token service's headless sessions): a structured UNIMPLEMENTED (501), after the capability and the
// request are checked as for any call, never a 404; in /openapi.json and the typed client like the others.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiCallError, createClient } from '../generated/client/index.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let idp: string;

test.before(async () => {
  s = await startTestServer();
  const org = s.bootstrap.organization;
  const viewer = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const oidc = { issuer: 'https://idp.example', clientId: 'platform', clientSecret: 's3cret' };
  idp = (await s.call('POST', `/iam/v2/identityProviders/${org}`, { name: 'corp', defaultRole: viewer, oidc })).body
    .uid;
});
test.after(async () => s.stop());

function unimplemented(r: Reply, what: RegExp) {
  assert.is(r.status, 501, JSON.stringify(r.body));
  assert.is(r.body.code, 12);
  assert.is(r.body.details[0].reason, 'UNIMPLEMENTED');
  assert.match(r.body.message, what);
}

test('SCIM token calls and the account check: 501 saying what is missing, once the caller may call them', async () => {
  for (const verb of ['generateScimToken', 'regenerateScimToken', 'revokeScimToken', 'setScimEnabled'])
    unimplemented(await s.call('POST', `/iam/v2/identityProviders/${idp}:${verb}`, {}), /SCIM/);
  const association = await s.call('POST', `/iam/v2/accountAssociations/${s.bootstrap.organization}`, {
    name: 'cloud',
  });
  unimplemented(
    await s.call('POST', `/iam/v2/accountAssociations/${association.body.uid}:checkAccountAssociation`, {}),
    /credential exchange/,
  );
  const stranger = (await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'x' })).body.uid;
  const denied = await s.call(
    'POST',
    `/iam/v2/identityProviders/${idp}:generateScimToken`,
    {},
    {
      authorization: `Bearer ${await s.mint(stranger)}`,
    },
  );
  assert.is(denied.status, 403, 'the capability is checked first');
  const invalid = await s.call('POST', `/iam/v2/identityProviders/${idp}:setScimEnabled`, { enabled: 'yes' });
  assert.is(invalid.status, 400, 'the body is validated first');
});

test('the token service: headless sessions are 501, with or without a token', async () => {
  unimplemented(await s.call('GET', '/sts/headless_sessions?code=x', undefined, { authorization: '' }), /browser/);
});

test('declared like any call: in /openapi.json and in the typed client', async () => {
  const paths = Object.keys((await s.call('GET', '/openapi.json')).body.paths);
  assert.ok(
    paths.some((p) => p.endsWith(':generateScimToken')),
    'documented',
  );
  const client = createClient({ baseUrl: s.url, token: s.token });
  const e = await client.iam.setScimEnabled({ identityProviderUid: idp, body: { enabled: true } }).catch((x) => x);
  assert.ok(e instanceof ApiCallError);
  assert.equal([e.status, e.code, e.reason], [501, 12, 'UNIMPLEMENTED']);
});

test.run();
