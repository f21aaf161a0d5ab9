// The v1 compatibility routes over the same data, tokens and capabilities as v2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
});
test.after(async () => s.stop());

test('a repo created in v2 is listed by v1 with v1 field names, and the other way round', async () => {
  const v2 = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'from-v2', description: 'two' })).body;
  const listed = await s.call('GET', `/registry/v1/repos?id=${v2.uid}`);
  assert.is(listed.status, 200, JSON.stringify(listed.body));
  assert.equal(listed.body, {
    items: [{ id: v2.uid, name: 'from-v2', description: 'two', created_at: v2.createTime, updated_at: v2.updateTime }],
  });
  const v1 = await s.call('POST', `/registry/v1/repos/${org}`, { name: 'from-v1' });
  assert.is(v1.status, 200, JSON.stringify(v1.body));
  assert.match(v1.body.id, new RegExp(`^${org}/`));
  assert.is((await s.call('GET', `/registry/v2/repos/${v1.body.id}`)).body.name, 'from-v1');
});

test('v1 lists return every match in items, without a total; a filtered miss is an empty 200', async () => {
  const folder = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'v1 list' })).body.uid;
  for (let i = 0; i < 230; i++) await s.call('POST', `/registry/v2/repos/${folder}`, { name: `r${i}` });
  const all = await s.call('GET', `/registry/v1/repos?uidp.childrenOf=${folder}`);
  assert.is(all.body.items.length, 230, 'more than one v2 page');
  assert.equal(Object.keys(all.body), ['items']);
  const byName = await s.call('GET', `/registry/v1/repos?uidp.childrenOf=${folder}&name=r7`);
  assert.equal(
    byName.body.items.map((r: any) => r.name),
    ['r7'],
  );
  const missing = await s.call('GET', `/registry/v1/repos?id=${org}/0123456789abcdef`);
  assert.equal([missing.status, missing.body], [200, { items: [] }]);
});

test('PUT replaces: omitted fields reset; the result reads the same in v2', async () => {
  const repo = (
    await s.call('POST', `/registry/v2/repos/${org}`, { name: 'put-me', description: 'gone soon', aliases: ['a:1'] })
  ).body;
  const put = await s.call('PUT', `/registry/v1/repos/${repo.uid}`, { name: 'put-me' });
  assert.is(put.status, 200, JSON.stringify(put.body));
  assert.is(put.body.description, undefined);
  const v2 = (await s.call('GET', `/registry/v2/repos/${repo.uid}`)).body;
  assert.is(v2.description, undefined);
  assert.is(v2.aliases, undefined);
  assert.is(v2.name, 'put-me');
});

test('v1 roles carry dotted capability names', async () => {
  const created = await s.call('POST', `/iam/v1/roles/${org}`, {
    name: 'v1 role',
    capabilities: ['repo.list', 'tag.list'],
  });
  assert.is(created.status, 200, JSON.stringify(created.body));
  assert.equal(created.body.capabilities, ['repo.list', 'tag.list']);
  assert.equal((await s.call('GET', `/iam/v2/roles/${created.body.id}`)).body.capabilities, [
    'CAP_REPO_LIST',
    'CAP_TAG_LIST',
  ]);
  const viewer = (await s.call('GET', '/iam/v1/roles?name=viewer')).body.items[0];
  assert.ok(viewer.capabilities.includes('groups.list'));
});

test('v1 errors: a blocked delete has a code and message but no typed detail; same token, same capabilities', async () => {
  const g = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'v1 blocked' })).body.uid;
  await s.call('POST', `/registry/v2/repos/${g}`, { name: 'child' });
  const blocked = await s.call('DELETE', `/iam/v1/groups/${g}`);
  assert.is(blocked.status, 400);
  assert.is(blocked.body.code, 9);
  assert.match(blocked.body.message, /child repos/);
  assert.equal(blocked.body.details, []);
  assert.is((await s.call('GET', '/registry/v1/repos', undefined, { authorization: '' })).status, 401);
  const nobody = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'nobody' })).body.uid;
  const as = { authorization: `Bearer ${await s.mint(nobody)}` };
  assert.is((await s.call('POST', `/registry/v1/repos/${org}`, { name: 'x' }, as)).status, 403);
  assert.equal((await s.call('GET', '/registry/v1/repos', undefined, as)).body, { items: [] });
  const repo = (await s.call('POST', `/registry/v1/repos/${org}`, { name: 'deleted-in-v1' })).body;
  assert.equal((await s.call('DELETE', `/registry/v1/repos/${repo.id}`)).body, {});
  assert.is((await s.call('GET', `/registry/v2/repos/${repo.id}`)).status, 404);
});

test('ListEolTags lists the tags marked deprecated, paged', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'eol' })).body;
  const digest = `sha256:${'e'.repeat(64)}`;
  await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: 'current', digest });
  const old = (await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: '1.0', digest, deprecated: true })).body;
  const older = (await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: '0.9', digest, deprecated: true })).body;
  const first = await s.call('GET', `/registry/v1/eoltags?uidp.childrenOf=${repo.uid}&pageSize=1&orderBy=name`);
  assert.is(first.status, 200, JSON.stringify(first.body));
  assert.equal(
    first.body.items.map((t: any) => [t.id, t.name]),
    [[older.uid, '0.9']],
  );
  const second = await s.call(
    'GET',
    `/registry/v1/eoltags?uidp.childrenOf=${repo.uid}&pageSize=1&orderBy=name&pageToken=${first.body.nextPageToken}`,
  );
  assert.equal(
    second.body.items.map((t: any) => t.id),
    [old.uid],
  );
  assert.is(second.body.nextPageToken, '');
});

test.run();
