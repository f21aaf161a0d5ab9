// Runtime units that HTTP tests cannot reach cheaply: token expiry, mask paths, uid paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../runtime/model/errors.js';
import { TokenIssuer } from '../runtime/access/issuer.js';
import { applyFieldMask, maskedFields, parseFieldMask } from '../runtime/model/field-mask.js';
import { groupOf } from '../runtime/storage/outbox.js';
import { now } from '../runtime/model/records.js';
import type { ApiModel, FieldModel, ResourceModel } from '../runtime/model/api-model.js';
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

test('the fields a mask can change: the first segment of each path, once; every field for "*"', () => {
  assert.equal(maskedFields(parseFieldMask('oidc.issuer,description,oidc', {}, fields), fields), [
    'oidc',
    'description',
  ]);
  assert.equal(maskedFields(parseFieldMask(undefined, { name: 'n', other: 1 }, fields), fields), ['name']);
  assert.equal(maskedFields(parseFieldMask('*', {}, fields), fields), Object.keys(fields));
});

test("a record's group: the uid less one segment per level up to the group, as splitting and joining gives", () => {
  const resource = (collection: string, parent?: string, uid?: string) =>
    ({ collection, parent, uid }) as unknown as ResourceModel;
  const resources = {
    groups: resource('groups', 'groups'),
    repos: resource('repos', 'groups'),
    tags: resource('tags', 'repos'),
    accounts: resource('accounts', 'groups', 'parent'),
    orphans: resource('orphans'),
  };
  const model = { resources } as unknown as ApiModel;
  // The definition it replaces: drop the last segment per level that has its own.
  const bySegments = (r: ResourceModel, uid: string) => {
    let segments = uid.split('/');
    for (
      let c: ResourceModel | undefined = r;
      c && c.collection !== 'groups';
      c = c.parent ? model.resources[c.parent] : undefined
    )
      if (c.uid !== 'parent') segments = segments.slice(0, -1);
    const top = (function up(c: ResourceModel | undefined): ResourceModel | undefined {
      return !c || c.collection === 'groups' ? c : up(c.parent ? model.resources[c.parent] : undefined);
    })(r);
    return top && segments.length > 0 ? segments.join('/') : null;
  };
  const uids = ['', '/', 'a', '/a', 'a/', 'a//b', 'a/b', 'a/b/c', 'a/b/c/d', '//', 'a/b/'];
  for (const r of Object.values(resources))
    for (const uid of uids)
      assert.is(groupOf(model, r, uid), bySegments(r, uid), `${r.collection} ${JSON.stringify(uid)}`);
  assert.is(groupOf(model, resources.tags, 'g1/g2/repo/tag'), 'g1/g2');
  assert.is(groupOf(model, resources.accounts, 'g1/g2'), 'g1/g2');
  assert.is(groupOf(model, resources.orphans, 'a/b'), null);
});

test('now: RFC 3339 UTC with milliseconds, never behind the clock', async () => {
  const before = Date.now();
  const first = now();
  assert.match(first, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(Date.parse(first) >= before && Date.parse(first) <= Date.now());
  await new Promise((resolve) => setTimeout(resolve, 5));
  const later = now();
  assert.ok(Date.parse(later) > Date.parse(first), 'a later call tells a later time');
  assert.is(Date.parse(later), Math.min(Date.parse(later), Date.now()));
});

test("now: the same text as Date's toISOString at every millisecond, across seconds and years", () => {
  const clock = Date.now;
  const instants = [0, 9, 10, 99, 100, 999, 1000, 1001, 1795858392999, 1795858393000, 1795858393007, 1798761599999];
  for (let i = 0; i < 2000; i++) instants.push(1795858392000 + i * 7, Math.floor(Math.random() * 4e12));
  try {
    for (const ms of instants) {
      Date.now = () => ms;
      assert.is(now(), new Date(ms).toISOString(), String(ms));
    }
  } finally {
    Date.now = clock;
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
