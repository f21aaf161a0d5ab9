// Runtime units that HTTP tests cannot reach cheaply: token expiry, mask paths, uid paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../runtime/model/errors.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { applyFieldMask, parseFieldMask } from '../runtime/model/field-mask.js';
import type { FieldModel } from '../runtime/model/api-model.js';
import { PageToken, pageTokenLifetimeMs } from '../runtime/lists/page-token.js';
import { ancestorsOf, isUidPath, newChildUid, newRootUid, parentOf } from '../runtime/model/uid.js';

test('a page token older than 3 days restarts the query; a fresh one continues', () => {
  const tokens = new PageToken(Buffer.alloc(32, 7));
  const digest = PageToken.queryDigest({ order: 'name asc' });
  const issued = Date.UTC(2026, 0, 1);
  const token = tokens.issue(digest, { key: 'b', uid: 'u' }, issued);
  assert.equal(tokens.read(token, digest, issued + 1000), { status: 'valid', cursor: { key: 'b', uid: 'u' } });
  assert.equal(tokens.read(token, digest, issued + pageTokenLifetimeMs + 1), { status: 'expired' });
  assert.is(tokens.read(token, PageToken.queryDigest({ order: 'name desc' }), issued).status, 'invalid');
  assert.is(new PageToken(Buffer.alloc(32, 8)).read(token, digest, issued).status, 'invalid', 'another server secret');
});

test('query digests do not depend on key order', () => {
  assert.is(PageToken.queryDigest({ a: 1, b: 2 }), PageToken.queryDigest({ b: 2, a: 1 }));
  assert.is.not(PageToken.queryDigest({ a: 1 }), PageToken.queryDigest({ a: 2 }));
});

const fields: Record<string, FieldModel> = {
  name: { type: 'string', required: true },
  description: { type: 'string' },
  status: { type: 'string', outputOnly: true },
  oidc: { type: 'object', fields: { issuer: { type: 'string' }, clientSecret: { type: 'string', inputOnly: true } } },
};

test('a field mask applied shares nothing with the record or the body, and keeps a member named __proto__', () => {
  const current = { name: 'a', oidc: { issuer: 'i', clientSecret: 's' }, tags: ['x'] };
  const body = JSON.parse('{"description": "d", "oidc": {"issuer": "j", "__proto__": {"polluted": true}}}');
  const next = applyFieldMask(current, body, parseFieldMask('description,oidc', {}, fields), fields) as any;
  next.tags.push('y');
  next.oidc.issuer = 'changed';
  assert.equal(current, { name: 'a', oidc: { issuer: 'i', clientSecret: 's' }, tags: ['x'] });
  assert.is(body.oidc.issuer, 'j');
  assert.ok(Object.hasOwn(next.oidc, '__proto__'), 'a member, as the body has it');
  assert.is(next.oidc.polluted, undefined, 'not the prototype');
});

test('field masks: nested paths, clearing, full replacement', () => {
  const current = { name: 'a', description: 'd', oidc: { issuer: 'i', clientSecret: 's' } };
  const masked = applyFieldMask(
    current,
    { oidc: { issuer: 'j' }, name: 'ignored' },
    parseFieldMask('oidc.issuer', {}, fields),
    fields,
  );
  assert.equal(masked, { name: 'a', description: 'd', oidc: { issuer: 'j', clientSecret: 's' } });
  const cleared = applyFieldMask(current, {}, parseFieldMask('description', {}, fields), fields);
  assert.equal(cleared, { name: 'a', oidc: { issuer: 'i', clientSecret: 's' } });
  const implied = parseFieldMask(undefined, { description: 'x', status: 'y', other: 1 }, fields);
  assert.equal(implied, { kind: 'fields', paths: ['description'] });
  const replaced = applyFieldMask(current, { name: 'b' }, parseFieldMask('*', {}, fields), fields);
  assert.equal(replaced, { name: 'b' });
  for (const bad of ['status', 'nope', 'oidc.nope', 'name.x', 'description,*']) {
    assert.throws(
      () => parseFieldMask(bad, {}, fields),
      (e: unknown) => e instanceof ApiError && e.codeName === 'INVALID_ARGUMENT',
      bad,
    );
  }
});

test('uid paths', () => {
  const root = newRootUid();
  const child = newChildUid(root);
  const grandchild = newChildUid(child);
  assert.ok(isUidPath(root) && isUidPath(child) && isUidPath(grandchild));
  assert.not.ok(isUidPath(`${root}/`) || isUidPath('ABC') || isUidPath(`${root}/xyz`));
  assert.is(parentOf(grandchild), child);
  assert.is(parentOf(root), undefined);
  assert.equal(ancestorsOf(grandchild), [child, root]);
});

test('a token verified once is still refused once it expires', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-'));
  try {
    const issuer = await TokenIssuer.open(dir, 'http://127.0.0.1:1', 'aud');
    const someone = 'a'.repeat(40);
    const { token } = await issuer.mint(someone, 2);
    assert.is(await issuer.verify(token), someone);
    assert.is(await issuer.verify(token), someone, 'answered from the cache');
    await new Promise((r) => setTimeout(r, 2100));
    try {
      await issuer.verify(token);
      assert.unreachable('an expired token verified');
    } catch (e) {
      assert.instance(e, ApiError);
      assert.match((e as Error).message, /expired/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
