// Rate limits against callers that fail to authenticate, and the address an anonymous caller is counted by:
// forged tokens are limited like any anonymous calling, and X-Forwarded-For counts only from a trusted proxy.
import { importJWK, SignJWT } from 'jose';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, readConfig } from '../runtime/operate/config.js';
import { lowS } from '../runtime/access/issuer.js';
import { callerAddress, trustedProxies } from '../runtime/operate/caller-address.js';
import { loadGenerated, type GeneratedParts } from '../server/server.js';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer, type TestServer } from './support/server.js';

let generated: GeneratedParts;
test.before(async () => {
  generated = await loadGenerated();
});

/** The server's own token with the last character of its signature changed: well formed, signed by nobody. */
function forge(token: string): string {
  const last = token.at(-2) === 'A' ? 'B' : 'A';
  return `${token.slice(0, -2)}${last}${token.at(-1)}`;
}

async function withServer(env: Record<string, string>, run: (s: TestServer) => Promise<void>): Promise<void> {
  const s = await startTestServer(generated, { RATE_LIMIT: '1', RATE_LIMIT_BURST: '10', ...env });
  try {
    await run(s);
  } finally {
    await s.stop();
  }
}

test('forged and expired bearer tokens count against the address: 12 forged requests end in 429', () =>
  withServer({}, async (s) => {
    const forged = forge(s.token);
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 12; i++) {
      last = await s.call('GET', '/iam/v2/groups', undefined, { authorization: `Bearer ${forged}` });
      statuses.push(last.status);
    }
    assert.equal(statuses.slice(0, 10), Array(10).fill(401), JSON.stringify(statuses));
    assert.equal(statuses.slice(10), [429, 429], JSON.stringify(last!.body));
    assert.match(last!.body.message, /from address 127\.0\.0\.1/);
    // The address is spent for anonymous calls too; the owner's own bucket is not.
    assert.is((await s.call('GET', '/openapi.json', undefined, { authorization: '' })).status, 429);
    assert.is((await s.call('GET', '/iam/v2/groups')).status, 200);
  }));

test('an expired token, really signed by the server, is counted as a forged one', () =>
  withServer({}, async (s) => {
    const keys = await s.signingKeys();
    const key = keys[keys.length - 1];
    const t = Math.floor(Date.now() / 1000) - 7200;
    const expired = lowS(
      await new SignJWT({ iss: s.url, aud: s.url, sub: s.bootstrap.owner, iat: t, exp: t + 600 })
        .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: key.kid })
        .sign(await importJWK(key.privateJwk, 'ES256')),
    );
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push((await s.call('GET', '/iam/v2/groups', undefined, { authorization: `Bearer ${expired}` })).status);
    assert.equal(statuses, [...Array(10).fill(401), 429, 429]);
  }));

test('gRPC: forged tokens count against the address as over HTTP', () =>
  withServer({}, async (s) => {
    const client = grpcClient(s.url, forge(s.token));
    try {
      const codes: number[] = [];
      for (let i = 0; i < 12; i++) codes.push((await client.call('iam.v2.GroupsService', 'ListGroups', {})).code);
      assert.equal(codes, [...Array(10).fill(16), 8, 8]);
      // One bucket per address across transports: HTTP from the same address is refused too.
      assert.is((await s.call('GET', '/openapi.json', undefined, { authorization: '' })).status, 429);
    } finally {
      client.close();
    }
  }));

/** Anonymous requests claiming to come from `from`, until the first 429; answers that answer's message. */
async function exhaust(s: TestServer, from: string): Promise<string> {
  for (let i = 0; i < 20; i++) {
    const r = await s.call('GET', '/openapi.json', undefined, { authorization: '', 'x-forwarded-for': from });
    if (r.status === 429) return r.body.message;
  }
  throw new Error('never limited');
}

test('TRUSTED_PROXIES: behind a trusted proxy each forwarded address has its own bucket, the rightmost untrusted hop', () =>
  withServer({ TRUSTED_PROXIES: '127.0.0.1,10.0.0.0/8' }, async (s) => {
    // The client wrote 198.51.100.1 itself; our proxies appended the address they saw and their own.
    assert.match(await exhaust(s, '198.51.100.1, 203.0.113.7, 10.1.2.3'), /from address 203\.0\.113\.7;/);
    const other = await s.call('GET', '/openapi.json', undefined, {
      authorization: '',
      'x-forwarded-for': '203.0.113.8',
    });
    assert.is(other.status, 200);
    // Spoofing the leftmost hop does not give the same caller a new bucket.
    const spoofed = await s.call('GET', '/openapi.json', undefined, {
      authorization: '',
      'x-forwarded-for': '198.51.100.99, 203.0.113.7',
    });
    assert.is(spoofed.status, 429);
    // gRPC reads x-forwarded-for the same way, into the same buckets.
    const client = grpcClient(s.url, '');
    try {
      const call = (from: string) =>
        client.call('iam.v2.GroupsService', 'ListGroups', {}, '', {}, { 'x-forwarded-for': from });
      // The bucket HTTP spent refills one a second: a slow machine may have given it one back since. A bucket of
      // gRPC's own would take 11 calls to refuse; the shared one refuses within three.
      let refused = await call('198.51.100.5, 203.0.113.7');
      for (let i = 0; i < 2 && refused.code !== 8; i++) refused = await call('198.51.100.5, 203.0.113.7');
      assert.is(refused.code, 8);
      assert.match(refused.message ?? '', /from address 203\.0\.113\.7;/);
      assert.is.not((await call('203.0.113.9')).code, 8);
    } finally {
      client.close();
    }
  }));

test('without TRUSTED_PROXIES, or from a peer not in it, X-Forwarded-For is ignored: the socket address counts', async () => {
  for (const env of [{}, { TRUSTED_PROXIES: '10.0.0.0/8' }] as Record<string, string>[])
    await withServer(env, async (s) => {
      assert.match(await exhaust(s, '203.0.113.7'), /from address 127\.0\.0\.1;/);
      const r = await s.call('GET', '/openapi.json', undefined, {
        authorization: '',
        'x-forwarded-for': '203.0.113.8',
      });
      assert.is(r.status, 429, JSON.stringify(env));
    });
});

test('callerAddress: the rightmost untrusted hop, IPv4 in IPv6 form, and a hop that is no address', () => {
  const proxies = trustedProxies('127.0.0.1, 10.0.0.0/8, fd00::/8');
  assert.is(callerAddress('::ffff:127.0.0.1', '1.1.1.1, 2.2.2.2, 10.0.0.5', proxies), '2.2.2.2');
  assert.is(callerAddress('fd00::1', '2001:db8::1', proxies), '2001:db8::1');
  assert.is(callerAddress('127.0.0.1', '10.0.0.1, 10.0.0.2', proxies), '10.0.0.1');
  assert.is(callerAddress('127.0.0.1', '1.1.1.1, unknown, 10.0.0.2', proxies), '10.0.0.2');
  assert.is(callerAddress('192.0.2.1', '1.1.1.1', proxies), '192.0.2.1');
  assert.is(callerAddress('127.0.0.1', '1.1.1.1', undefined), '127.0.0.1');
  for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.1/8/1', ''])
    assert.throws(
      () => readConfig({ DATA_DIR: '/tmp/x', TRUSTED_PROXIES: `127.0.0.1,${bad}` }),
      (e: unknown) => e instanceof ConfigError && /^TRUSTED_PROXIES must be/.test(e.message),
      bad,
    );
});

test.run();
