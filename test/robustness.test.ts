// Odd input gets a structured 4xx, never a 5xx or an empty answer: one case per family found by attacking the
// server (test/fuzz.test.ts looks for more at random), and slow clients are cut off.
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readConfig } from '../runtime/operate/config.js';
import { startServer } from '../server/server.js';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;
let repo: string;

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
  repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'nginx' })).body.uid;
});
test.after(async () => s.stop());

function structured(r: Reply, status: number, what: string, v1 = false) {
  assert.is(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.type(r.body, 'object', what);
  assert.is(r.body.code, 3, what);
  assert.type(r.body.message, 'string');
  assert.ok(Array.isArray(r.body.details), what);
  if (!v1)
    assert.is(
      r.body.details.filter((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo').length,
      1,
      what,
    );
}

/** A request written byte for byte on a socket; resolves to the raw answer when the server closes. */
function raw(
  request: string | Buffer,
  url = s.url,
  drip?: { bytes: Buffer; everyMs: number },
): Promise<{ text: string; ms: number }> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(request);
      if (drip) {
        let i = 0;
        const timer = setInterval(() => {
          if (i >= drip.bytes.length || socket.destroyed) return clearInterval(timer);
          socket.write(drip.bytes.subarray(i, ++i));
        }, drip.everyMs);
        socket.on('close', () => clearInterval(timer));
      }
    });
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('latin1');
    });
    // A server that closes a connection with unread input (the drip's next byte) resets it: that is a cut too,
    // and what it answered before arrives first.
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
  });
}

function rawStructured(answer: string, status: number, what: string) {
  assert.match(answer, new RegExp(`^HTTP/1.1 ${status} `), `${what}: ${answer.slice(0, 200)}`);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
  assert.is(body.code, 3, what);
  assert.match(body.message, /^Invalid argument: /, what);
  assert.is(body.details[0]['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
}

test('what the HTTP parser refuses is answered in JSON too', async () => {
  rawStructured(
    (
      await raw(
        Buffer.concat([
          Buffer.from('GET /registry/v2/repos/'),
          Buffer.from([0xff]),
          Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
        ]),
      )
    ).text,
    400,
    'a raw non-UTF-8 byte',
  );
  rawStructured(
    (await raw(`GET /ping/v2/ping HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`)).text,
    431,
    'headers over 16 KB',
  );
  rawStructured((await raw('NOT A REQUEST\r\n\r\n')).text, 400, 'a malformed request line');
  rawStructured((await raw('GET /ping/v2/ping HTTP/1.1\r\nConnection: close\r\n\r\n')).text, 400, 'no Host header');
  rawStructured(
    (
      await raw(
        'POST /ping/v2/ping HTTP/1.1\r\nHost: x\r\nExpect: magic\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
      )
    ).text,
    417,
    'an unknown Expect',
  );
  const connect = (await raw('CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n')).text;
  assert.match(connect, /^HTTP\/1.1 405 /, connect);
  assert.is(JSON.parse(connect.slice(connect.indexOf('\r\n\r\n') + 4)).code, 12);
});

test('a list of 100,000 bad items is refused with a bounded list of violations', async () => {
  const r = await s.call('POST', `/iam/v2/roles/${org}`, {
    name: 'big',
    capabilities: Array.from({ length: 100_000 }, (_, i) => `X${i}`),
  });
  structured(r, 400, 'a huge enum list');
  assert.ok(r.body.details.find((d: any) => d.fieldViolations).fieldViolations.length <= 20);
});

test('huge, infinite and fractional counts are INVALID_ARGUMENT on v2 and v1 lists', async () => {
  for (const value of ['1e99', '99999999999999999999', 'Infinity', '1e400', '-1', '1.5', 'NaN']) {
    for (const name of ['skip', 'page_size', 'pageSize']) {
      structured(await s.call('GET', `/registry/v2/repos?${name}=${value}`), 400, `v2 ${name}=${value}`);
    }
    structured(await s.call('GET', `/registry/v1/repos?skip=${value}`), 400, `v1 skip=${value}`, true);
    structured(
      await s.call('GET', `/vulnerabilities/v1/advisories?pageSize=${value}`),
      400,
      `v1 pageSize=${value}`,
      true,
    );
  }
  const big = await s.call('GET', '/registry/v2/repos?page_size=5000&skip=100000');
  assert.is(big.status, 200, 'large values within the limits still work');
  assert.is(big.body.repos.length, 0);
  structured(await s.call('GET', '/registry/v2/repos?skip=9007199254740991'), 400, 'a skip past 100,000');
});

test('prototype keys and deep nesting are refused by name, on v2 and v1', async () => {
  for (const [path, v1] of [
    [`/registry/v1/repos/${org}`, true],
    [`/registry/v2/repos/${org}`, false],
  ] as const) {
    structured(await s.call('POST', path, '{"name":"a","__proto__":{"polluted":1}}'), 400, `__proto__ on ${path}`, v1);
    structured(
      await s.call('POST', path, '{"name":"a","constructor":{"prototype":{"polluted":1}}}'),
      400,
      `constructor on ${path}`,
      v1,
    );
    structured(await s.call('POST', path, '{"name":"a","toString":1}'), 400, `toString on ${path}`, v1);
    structured(
      await s.call('POST', path, `${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}`),
      400,
      `deep object on ${path}`,
      v1,
    );
    structured(
      await s.call('POST', path, `${'['.repeat(10000)}${']'.repeat(10000)}`),
      400,
      `deep array on ${path}`,
      v1,
    );
  }
  assert.is(({} as Record<string, unknown>).polluted, undefined, 'no prototype was changed');
  structured(await s.call('GET', '/registry/v2/repos?order_by=constructor'), 400, 'order_by naming a prototype member');
  structured(
    await s.call('PATCH', `/registry/v2/repos/${repo}?updateMask=constructor`, { name: 'nginx' }),
    400,
    'a mask naming a prototype member',
  );
  structured(
    await s.call('PATCH', `/registry/v2/repos/${repo}`, { toString: 'x' }),
    400,
    'a body field naming a prototype member',
  );
});

test('a mask path naming an inherited name is INVALID_ARGUMENT with a violation, over HTTP and gRPC', async () => {
  const identity = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'masked',
    claimMatch: { issuer: 'https://issuer.example', subject: 'ci', claims: { aud: 'x' } },
  });
  assert.is(identity.status, 200, JSON.stringify(identity.body));
  const uid = identity.body.uid;
  const body = { claimMatch: { issuer: 'https://issuer.example', subject: 'ci', claims: {} } };
  const grpc = grpcClient(s.url, s.token);
  try {
    for (const name of ['constructor', '__proto__', 'prototype', 'toString', 'hasOwnProperty']) {
      for (const mask of [`claimMatch.claims.${name}`, `claimMatch.${name}`, name]) {
        const r = await s.call('PATCH', `/iam/v2/identities/${uid}?update_mask=${mask}`, body);
        structured(r, 400, mask);
        const violation = r.body.details.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
        assert.is(violation?.fieldViolations[0]?.field, 'update_mask', mask);
        const overGrpc = await grpc.call('iam.v2.IdentitiesService', 'UpdateIdentity', {
          identity: { uid, name: 'masked', claim_match: { issuer: 'https://issuer.example', subject: 'ci' } },
          update_mask: { paths: [mask.replace('claimMatch', 'claim_match')] },
        });
        assert.is(overGrpc.code, 3, `${mask} over gRPC: ${overGrpc.message}`);
        assert.ok(
          overGrpc.details.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest'),
          `${mask} over gRPC carries a BadRequest`,
        );
      }
    }
  } finally {
    grpc.close();
  }
  const kept = await s.call('GET', `/iam/v2/identities/${uid}`);
  assert.equal(kept.body.claimMatch.claims, { aud: 'x' }, 'nothing changed');
  const masked = await s.call('PATCH', `/iam/v2/identities/${uid}?update_mask=claimMatch.claims.aud`, body);
  assert.is(masked.status, 200, JSON.stringify(masked.body));
  assert.equal(masked.body.claimMatch.claims ?? {}, {}, 'a map key the mask names and the body lacks is cleared');
  assert.is(({} as Record<string, unknown>).polluted, undefined);
});

test('NUL characters are refused wherever they arrive', async () => {
  structured(await s.call('GET', `/registry/v2/repos/${repo}%00`), 400, 'path');
  structured(await s.call('GET', '/registry/v2/repos?name=a%00b'), 400, 'query value');
  structured(await s.call('GET', '/registry/v2/repos?na%00me=a'), 400, 'query name');
  structured(await s.call('GET', '/iam/v2/identities:lookupIdentity?issuer=a%00&subject=b'), 400, 'lookup parameter');
  structured(
    await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: `${s.bootstrap.owner}\u0000`, roleUid: 'x' }),
    400,
    'reference field',
  );
  structured(
    await s.call('POST', `/iam/v2/identityProviders/${org}`, {
      name: 'idp',
      defaultRole: 'a\u0000',
      oidc: { issuer: 'i', clientId: 'c' },
    }),
    400,
    'defaultRole',
  );
  structured(
    await s.call('POST', `/registry/v2/repos/${org}`, { name: 'ok', description: 'a\u0000b' }),
    400,
    'body string',
  );
  structured(
    await s.call('POST', `/registry/v1/repos/${org}`, { name: 'ok', description: 'a\u0000b' }),
    400,
    'v1 body string',
    true,
  );
});

test('half of a surrogate pair in a body is refused, on either engine, and a whole pair is kept', async () => {
  structured(
    await s.call('POST', `/registry/v2/repos/${org}`, { name: 'half', description: 'a\ud800b' }),
    400,
    'lone high surrogate',
  );
  structured(
    await s.call('POST', `/registry/v2/repos/${org}`, { name: 'half', aliases: ['\udc00'] }),
    400,
    'lone low surrogate in a list',
  );
  structured(await s.call('POST', `/registry/v2/repos/${org}`, { name: 'half', ['k\ud800']: 1 }), 400, 'field name');
  const made = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'pair', description: 'smile \ud83d\ude00' });
  assert.is(made.status, 200);
  const read = await s.call('GET', `/registry/v2/repos/${made.body.uid}`);
  assert.is(read.body.description, 'smile 😀');
});

test('a request id is echoed only when it is a plain token', async () => {
  const mine = await s.call('GET', '/ping/v2/ping', undefined, { 'x-request-id': 'trace-1.2:3' });
  assert.is(mine.headers.get('x-request-id'), 'trace-1.2:3');
  const long = await s.call('GET', '/ping/v2/ping', undefined, { 'x-request-id': 'a'.repeat(5000) });
  assert.is(long.status, 200);
  assert.match(long.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
});

test('the documents take no query parameters either', async () => {
  for (const path of ['/openapi.json', '/.well-known/jwks.json', '/.well-known/openid-configuration']) {
    const r = await s.call('GET', `${path}?format=yaml`, undefined, { authorization: '' });
    structured(r, 400, path);
    assert.match(r.body.message, /format/);
    assert.is((await s.call('GET', path, undefined, { authorization: '' })).status, 200);
  }
});

test('list parameters of hand-written lists are read as lists however they arrive', async () => {
  const r = await s.call('GET', `/iam/v2/terms/${org}?uidp.ids=x`);
  assert.ok(r.status === 200 || r.status === 400, `${r.status} ${JSON.stringify(r.body)}`);
  const again = await s.call('GET', `/iam/v2/terms/${org}?uidp.ids=x&uidp.ids=y`);
  assert.ok(again.status === 200 || again.status === 400, `${again.status} ${JSON.stringify(again.body)}`);
});

test('a client that sends its body or its headers a byte a second is cut off', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-api-slow-'));
  const server = await startServer(
    readConfig({ PORT: '0', DATA_DIR: dataDir, LOG: 'off', REQUEST_TIMEOUT: '2', HEADERS_TIMEOUT: '1' }),
  );
  try {
    const body = await raw(
      `POST /registry/v2/repos/${'a'.repeat(40)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
      server.url,
      { bytes: Buffer.from(' '.repeat(100)), everyMs: 1000 },
    );
    assert.ok(body.ms < 30_000, `cut off long before the 100 s drip ends: after ${body.ms} ms`);
    if (body.text) rawStructured(body.text, 408, 'slow body');
    const headers = await raw('GET /ping/v2/ping HTTP/1.1\r\n', server.url, {
      bytes: Buffer.from('X-Slow: aaaaaaaaaaaaaaaaaaaa\r\n'),
      everyMs: 1000,
    });
    assert.ok(headers.ms < 30_000, `a drip that never ends was cut off: after ${headers.ms} ms`);
    rawStructured(headers.text, 408, 'slow headers');
    // Answered before its body (a GET does not read one): one answer, then the late body ends the connection.
    const early = await raw('GET /ping/v2/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n', server.url, {
      bytes: Buffer.from(' '.repeat(100)),
      everyMs: 500,
    });
    assert.ok(early.ms < 30_000, `cut off: after ${early.ms} ms`);
    assert.match(early.text, /^HTTP\/1\.1 200 OK/);
    assert.is(early.text.match(/HTTP\/1\.1 \d{3}/g)?.length, 1, `one answer only: ${early.text}`);
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
