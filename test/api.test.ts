// End to end over real HTTP against a real SQLite file: the v2 conventions every resource shares.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createOrg, startTestServer, type Reply, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;

test.before(async () => {
  s = await startTestServer();
  org = await createOrg(s);
});
test.after(async () => s.stop());

const json = { 'content-type': 'application/json' };
const rfc3339ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertError(r: Reply, status: number, code: number, reason: string) {
  assert.is(r.status, status, `HTTP status of ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, code);
  assert.type(r.body.message, 'string');
  const infos = r.body.details.filter((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
  assert.is(infos.length, 1, 'exactly one ErrorInfo');
  assert.is(infos[0].reason, reason);
  assert.match(infos[0].domain, /^[a-z]+\.platform\.dev$/);
  for (const d of r.body.details) assert.match(d['@type'], /^type\.googleapis\.com\/google\.rpc\./);
  assert.not.match(JSON.stringify(r.body), /at .*\.ts:|SQLITE|select |insert /i);
}

async function newGroup(parent: string, name: string): Promise<string> {
  const r = await s.call('POST', `/iam/v2/groups/${parent}`, { name });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body.uid;
}

test('ping answers', async () => {
  const r = await s.call('GET', '/ping/v2/ping');
  assert.is(r.status, 200);
  assert.equal(r.body, { response: 'pong' });
});

test('create returns the resource with a server uid under the parent and millisecond UTC times', async () => {
  const r = await s.call('POST', `/registry/v2/repos/${org}`, {
    name: 'nginx',
    description: 'web',
    uid: 'mine',
    createTime: '2000-01-01T00:00:00.000Z',
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.match(r.body.uid, new RegExp(`^${org}/[0-9a-f]{16}$`));
  assert.is(r.body.name, 'nginx');
  assert.match(r.body.createTime, rfc3339ms);
  assert.is.not(r.body.createTime, '2000-01-01T00:00:00.000Z', 'output-only createTime is ignored');
  const got = await s.call('GET', `/registry/v2/repos/${r.body.uid}`);
  assert.equal(got.body, r.body);
  const escaped = await s.call('GET', `/registry/v2/repos/${encodeURIComponent(r.body.uid)}`);
  assert.equal(escaped.body, r.body, 'a uid with %2F reaches the same resource');
});

test('required fields and patterns are enforced with BadRequest field violations', async () => {
  const empty = await s.call('POST', `/iam/v2/identities/${org}`, {});
  assertError(empty, 400, 3, 'INVALID_ARGUMENT');
  const br = empty.body.details.find((d: any) => d['@type'].endsWith('BadRequest'));
  assert.equal(
    br.fieldViolations.map((v: any) => v.field),
    ['name'],
  );
  assert.match(empty.body.message, /^Invalid argument: name: /);
  const bad = await s.call('POST', `/iam/v2/identities/${org}`, { name: 'Bad Name!' });
  assertError(bad, 400, 3, 'INVALID_ARGUMENT');
  assert.match(bad.body.message, /name must match "\^\[a-z0-9 \._-\]\{1,\}\$"/);
  const ok = await s.call('POST', `/iam/v2/identities/${org}`, {
    name: 'ci bot',
    claimMatch: { issuer: 'https://issuer.example', subject: 'repo:x' },
  });
  assert.is(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body.claimMatch, { issuer: 'https://issuer.example', subject: 'repo:x' });
  const unknown = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'x', colour: 'red' });
  assertError(unknown, 400, 3, 'INVALID_ARGUMENT');
  assert.match(unknown.body.message, /colour/);
});

test('a missing resource is NOT_FOUND with ResourceInfo; a missing parent too', async () => {
  const r = await s.call('GET', `/registry/v2/repos/${org}/0123456789abcdef`);
  assertError(r, 404, 5, 'NOT_FOUND');
  const info = r.body.details.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ResourceInfo');
  assert.is(info.resourceName, `${org}/0123456789abcdef`);
  const noParent = await s.call('POST', `/registry/v2/repos/${org}/0123456789abcdef`, { name: 'x' });
  assertError(noParent, 404, 5, 'NOT_FOUND');
  const elsewhere = await s.call('POST', `/registry/v2/repos/${'f'.repeat(40)}`, { name: 'x' });
  assertError(elsewhere, 403, 7, 'PERMISSION_DENIED');
  const badUid = await s.call('GET', '/registry/v2/repos/not-a-uid');
  assertError(badUid, 400, 3, 'INVALID_ARGUMENT');
});

test('a natural key is taken once: a second repo of the same name under one group is ALREADY_EXISTS, at once or racing', async () => {
  const first = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'twin' });
  assert.is(first.status, 200);
  const second = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'twin' });
  assertError(second, 409, 6, 'ALREADY_EXISTS');
  assert.match(JSON.stringify(second.body), /name \\"twin\\"/);
  // Eight creates of one new name at once: one is made, the others refused, on either engine.
  const racing = await Promise.all(
    Array.from({ length: 8 }, () => s.call('POST', `/registry/v2/repos/${org}`, { name: 'racer' })),
  );
  assert.equal(racing.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409, 409, 409]);
  const listed = await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}&name=racer`);
  assert.is(listed.body.repos.length, 1);
  // Another group may have its own.
  const group = await s.call('POST', `/iam/v2/groups/${org}`, { name: 'elsewhere-twin' });
  assert.is((await s.call('POST', `/registry/v2/repos/${group.body.uid}`, { name: 'twin' })).status, 200);
  // Renaming into a taken name is refused the same way (it was a 500: the unique index refused the update);
  // renaming at once into a free name, one of them wins.
  const other = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'not-twin' });
  const renamed = await s.call('PATCH', `/registry/v2/repos/${other.body.uid}`, { name: 'twin' });
  assertError(renamed, 409, 6, 'ALREADY_EXISTS');
  assert.is((await s.call('PATCH', `/registry/v2/repos/${other.body.uid}`, { name: 'not-twin' })).status, 200);
  const third = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'third' });
  const moves = await Promise.all(
    [other.body.uid, third.body.uid].map((uid) => s.call('PATCH', `/registry/v2/repos/${uid}`, { name: 'free' })),
  );
  assert.equal(moves.map((r) => r.status).sort(), [200, 409]);
});

test('PATCH: no mask changes present fields; a mask ignores other fields; * replaces; bad masks are rejected', async () => {
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, {
    name: 'patchme',
    description: 'one',
    aliases: ['a:1'],
  });
  let r = await s.call('PATCH', `/registry/v2/repos/${repo.uid}`, { description: 'two' });
  assert.is(r.body.description, 'two');
  assert.is(r.body.name, 'patchme');
  assert.equal(r.body.aliases, ['a:1']);
  assert.ok(r.body.updateTime >= repo.updateTime);
  r = await s.call('PATCH', `/registry/v2/repos/${repo.uid}?updateMask=description`, {
    name: 'renamed',
    description: 'three',
  });
  assert.is(r.body.description, 'three');
  assert.is(r.body.name, 'patchme', 'name outside the mask is ignored');
  r = await s.call('PATCH', `/registry/v2/repos/${repo.uid}?update_mask=*`, { name: 'replaced' });
  assert.is(r.body.name, 'replaced');
  assert.is(r.body.description, undefined, '* resets fields absent from the body');
  assert.is(r.body.aliases, undefined);
  const stored = await s.call('GET', `/registry/v2/repos/${repo.uid}`);
  assert.equal(stored.body, r.body);
  assertError(
    await s.call('PATCH', `/registry/v2/repos/${repo.uid}?updateMask=colour`, {}),
    400,
    3,
    'INVALID_ARGUMENT',
  );
  assertError(await s.call('PATCH', `/registry/v2/repos/${repo.uid}?updateMask=uid`, {}), 400, 3, 'INVALID_ARGUMENT');
  assertError(
    await s.call('PATCH', `/registry/v2/repos/${repo.uid}?updateMask=*`, { description: 'no name' }),
    400,
    3,
    'INVALID_ARGUMENT',
  );
  const after = await s.call('GET', `/registry/v2/repos/${repo.uid}`);
  assert.equal(after.body, r.body, 'a rejected update changes nothing');
});

test('an object is answered in the order of its fields, however its members were sent or patched in', async () => {
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, {
    name: 'ordered',
    sync_config: { apkoOverlay: 'o', source: 's' },
  });
  assert.ok(repo.sync_config, JSON.stringify(repo));
  assert.equal(Object.keys(repo.sync_config), ['source', 'apkoOverlay']);
  const patched = await s.call('PATCH', `/registry/v2/repos/${repo.uid}?update_mask=sync_config.google`, {
    sync_config: { google: 'g' },
  });
  assert.is(patched.status, 200, JSON.stringify(patched.body));
  const order = ['source', 'google', 'apkoOverlay'];
  assert.equal(Object.keys(patched.body.sync_config), order);
  const got = await s.call('GET', `/registry/v2/repos/${repo.uid}`);
  assert.equal(Object.keys(got.body.sync_config), order);
  assert.equal(got.body, patched.body);
  const listed = await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}&name=ordered`);
  assert.equal(Object.keys(listed.body.repos[0].sync_config), order);
});

test('immutable fields cannot change; restating them is fine', async () => {
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'tagged' });
  const digest = `sha256:${'b'.repeat(64)}`;
  const tag = await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: 'latest', digest });
  assert.is(tag.status, 200, JSON.stringify(tag.body));
  assert.match(tag.body.uid, new RegExp(`^${repo.uid}/[0-9a-f]{16}$`));
  const { body: group } = await s.call('POST', `/iam/v2/groups/${org}`, { name: 'immutable' });
  const { body: role } = await s.call('POST', `/iam/v2/roles/${org}`, { name: 'r', capabilities: ['CAP_REPO_LIST'] });
  const { body: other } = await s.call('POST', `/iam/v2/roles/${org}`, {
    name: 'other',
    capabilities: ['CAP_TAG_LIST'],
  });
  const { body: id1 } = await s.call('POST', `/iam/v2/identities/${org}`, { name: 'one' });
  const { body: id2 } = await s.call('POST', `/iam/v2/identities/${org}`, { name: 'two' });
  const { body: binding } = await s.call('POST', `/iam/v2/roleBindings/${group.uid}`, {
    identityUid: id1.uid,
    roleUid: role.uid,
  });
  assert.is(binding.identityUid, id1.uid);
  assertError(
    await s.call('PATCH', `/iam/v2/roleBindings/${binding.uid}`, { identityUid: id2.uid }),
    400,
    3,
    'INVALID_ARGUMENT',
  );
  const same = await s.call('PATCH', `/iam/v2/roleBindings/${binding.uid}`, {
    identityUid: id1.uid,
    roleUid: other.uid,
  });
  assert.is(same.status, 200, JSON.stringify(same.body));
  assert.is(same.body.roleUid, other.uid);
});

test('list walks pages of 1 and 7 with no gaps, no duplicates, stable order, in every order and desc', async () => {
  const folder = await newGroup(org, 'walk');
  const names: string[] = [];
  for (let i = 0; i < 23; i++) {
    const name = `r${String((i * 7) % 23).padStart(2, '0')}`;
    names.push(name);
    const r = await s.call('POST', `/registry/v2/repos/${folder}`, { name });
    assert.is(r.status, 200);
  }
  for (const order of ['name', 'name desc', 'created_at', 'created_at desc', 'uid', 'uid desc', '']) {
    for (const size of [1, 7]) {
      const seen: any[] = [];
      let token = '';
      let pages = 0;
      do {
        const q = new URLSearchParams({ 'uidp.children_of': folder, page_size: String(size), order_by: order });
        if (token) q.set('page_token', token);
        const r = await s.call('GET', `/registry/v2/repos?${q}`);
        assert.is(r.status, 200, JSON.stringify(r.body));
        assert.is(r.body.totalCount, '23');
        assert.is(r.body.skipped, 0);
        assert.ok(r.body.repos.length <= size);
        seen.push(...r.body.repos);
        token = r.body.nextPageToken;
        assert.ok(++pages <= 24, 'the walk ends');
      } while (token);
      const uids = seen.map((x) => x.uid);
      assert.is(new Set(uids).size, 23, `order "${order}" size ${size}: no duplicates, no gaps`);
      const [key, dir] = order.split(' ');
      const field = key === 'created_at' ? 'createTime' : key || 'uid';
      const sorted = [...seen].sort((a, b) =>
        a[field] < b[field] ? -1 : a[field] > b[field] ? 1 : a.uid < b.uid ? -1 : 1,
      );
      if (dir === 'desc') sorted.reverse();
      assert.equal(
        uids,
        sorted.map((x) => x.uid),
        `order "${order}" is kept across pages`,
      );
    }
  }
  const skipped = await s.call(
    'GET',
    `/registry/v2/repos?uidp.children_of=${folder}&order_by=name&skip=20&page_size=5`,
  );
  assert.equal(
    skipped.body.repos.map((r: any) => r.name),
    [...names].sort().slice(20),
  );
  assert.is(skipped.body.skipped, 20);
  assert.is(skipped.body.nextPageToken, '');
  const camel = await s.call('GET', `/registry/v2/repos?uidp.childrenOf=${folder}&orderBy=name%20desc&pageSize=2`);
  assert.equal(
    camel.body.repos.map((r: any) => r.name),
    [...names].sort().reverse().slice(0, 2),
    'camelCase parameters work too',
  );
});

test('page tokens are bound to their query and protected against tampering', async () => {
  const folder = await newGroup(org, 'tokens');
  for (const name of ['a', 'b', 'c']) await s.call('POST', `/registry/v2/repos/${folder}`, { name });
  const first = await s.call('GET', `/registry/v2/repos?uidp.children_of=${folder}&page_size=1&order_by=name`);
  const token: string = first.body.nextPageToken;
  assert.ok(token);
  const next = await s.call(
    'GET',
    `/registry/v2/repos?uidp.children_of=${folder}&page_size=1&order_by=name&page_token=${token}`,
  );
  assert.equal(
    next.body.repos.map((r: any) => r.name),
    ['b'],
  );
  const otherOrder = await s.call(
    'GET',
    `/registry/v2/repos?uidp.children_of=${folder}&page_size=1&order_by=name%20desc&page_token=${token}`,
  );
  assertError(otherOrder, 400, 3, 'INVALID_ARGUMENT');
  const otherFilter = await s.call(
    'GET',
    `/registry/v2/repos?uidp.children_of=${org}&page_size=1&order_by=name&page_token=${token}`,
  );
  assertError(otherFilter, 400, 3, 'INVALID_ARGUMENT');
  const [payload, sig] = token.split('.');
  const forged = Buffer.from(Buffer.from(payload, 'base64url').toString().replace('"k":"a"', '"k":"b"')).toString(
    'base64url',
  );
  assertError(
    await s.call(
      'GET',
      `/registry/v2/repos?uidp.children_of=${folder}&page_size=1&order_by=name&page_token=${forged}.${sig}`,
    ),
    400,
    3,
    'INVALID_ARGUMENT',
  );
  assertError(
    await s.call('GET', `/registry/v2/repos?uidp.children_of=${folder}&page_size=1&order_by=name&page_token=garbage`),
    400,
    3,
    'INVALID_ARGUMENT',
  );
});

test('page_size: default 50, at most 200, negative rejected, not a number rejected', async () => {
  const folder = await newGroup(org, 'sizes');
  for (let i = 0; i < 205; i++) await s.call('POST', `/registry/v2/repos/${folder}`, { name: `n${i}` });
  const def = await s.call('GET', `/registry/v2/repos?uidp.children_of=${folder}`);
  assert.is(def.body.repos.length, 50);
  assert.is(def.body.totalCount, '205');
  const big = await s.call('GET', `/registry/v2/repos?uidp.children_of=${folder}&page_size=1000`);
  assert.is(big.body.repos.length, 200);
  assertError(await s.call('GET', `/registry/v2/repos?page_size=-1`), 400, 3, 'INVALID_ARGUMENT');
  assertError(await s.call('GET', `/registry/v2/repos?page_size=ten`), 400, 3, 'INVALID_ARGUMENT');
  assertError(await s.call('GET', `/registry/v2/repos?order_by=colour`), 400, 3, 'INVALID_ARGUMENT');
  assertError(await s.call('GET', `/registry/v2/repos?skip=-2`), 400, 3, 'INVALID_ARGUMENT');
});

test('hierarchy filters: children_of is direct children, descendants_of everything below; exact filters', async () => {
  const top = await newGroup(org, 'top');
  const sub = await newGroup(top, 'sub');
  const a = await s.call('POST', `/registry/v2/repos/${top}`, { name: 'same' });
  const b = await s.call('POST', `/registry/v2/repos/${sub}`, { name: 'same' });
  await s.call('POST', `/registry/v2/repos/${sub}`, { name: 'other' });
  const children = await s.call('GET', `/registry/v2/repos?uidp.children_of=${top}`);
  assert.equal(
    children.body.repos.map((r: any) => r.uid),
    [a.body.uid],
  );
  const desc = await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${top}&name=same&order_by=uid`);
  assert.equal(desc.body.repos.map((r: any) => r.uid).sort(), [a.body.uid, b.body.uid].sort());
  assert.is(desc.body.totalCount, '2');
  const groups = await s.call('GET', `/iam/v2/groups?uidp.descendants_of=${top}`);
  assert.equal(
    groups.body.groups.map((g: any) => g.uid),
    [sub],
    'descendants_of excludes the node itself',
  );
  const ancestors = await s.call('GET', `/iam/v2/groups?uidp.ancestors_of=${sub}&order_by=uid`);
  assert.equal(ancestors.body.groups.map((g: any) => g.uid).sort(), [org, top].sort());
  const roots = await s.call('GET', '/iam/v2/groups?uidp.in_root=true');
  assert.ok(roots.body.groups.every((g: any) => !g.uid.includes('/')));
  assertError(await s.call('GET', '/registry/v2/repos?uidp.children_of=nope'), 400, 3, 'INVALID_ARGUMENT');
});

test('deleting a non-empty group fails with RESOURCE_NOT_EMPTY and deletes nothing; delete then get is NOT_FOUND', async () => {
  const g = await newGroup(org, 'busy');
  const repo = await s.call('POST', `/registry/v2/repos/${g}`, { name: 'keep' });
  const r = await s.call('DELETE', `/iam/v2/groups/${g}`);
  assertError(r, 400, 9, 'FAILED_PRECONDITION');
  const pf = r.body.details.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.PreconditionFailure');
  assert.is(pf.violations[0].type, 'RESOURCE_NOT_EMPTY');
  assert.match(pf.violations[0].description, /cannot delete group with child repos/);
  assert.is((await s.call('GET', `/iam/v2/groups/${g}`)).status, 200);
  assert.is((await s.call('GET', `/registry/v2/repos/${repo.body.uid}`)).status, 200);
  const tag = await s.call('POST', `/registry/v2/tags/${repo.body.uid}`, {
    name: 'v1',
    digest: `sha256:${'c'.repeat(64)}`,
  });
  const del = await s.call('DELETE', `/registry/v2/repos/${repo.body.uid}`);
  assert.is(del.status, 200);
  assert.equal(del.body, {});
  assertError(await s.call('GET', `/registry/v2/repos/${repo.body.uid}`), 404, 5, 'NOT_FOUND');
  assertError(await s.call('GET', `/registry/v2/tags/${tag.body.uid}`), 404, 5, 'NOT_FOUND');
  assert.is((await s.call('DELETE', `/iam/v2/groups/${g}`)).status, 200);
  assertError(await s.call('DELETE', `/iam/v2/groups/${g}`), 404, 5, 'NOT_FOUND');
});

test('the repo readme is a sub-resource with get and patch', async () => {
  const { body: repo } = await s.call('POST', `/registry/v2/repos/${org}`, { name: 'readme' });
  const empty = await s.call('GET', `/registry/v2/repos/${repo.uid}/readme`);
  assert.equal(empty.body, { uid: repo.uid });
  const put = await s.call('PATCH', `/registry/v2/repos/${repo.uid}/readme`, { content: '# Hello' });
  assert.equal(put.body, { uid: repo.uid, content: '# Hello' });
  assert.equal((await s.call('GET', `/registry/v2/repos/${repo.uid}/readme`)).body, put.body);
  assertError(await s.call('GET', `/registry/v2/repos/${org}/0123456789abcdef/readme`), 404, 5, 'NOT_FOUND');
});

test('malformed requests get structured errors: JSON, content type, size, route, method, body shape', async () => {
  assertError(await s.call('POST', `/registry/v2/repos/${org}`, '{"name":', json), 400, 3, 'INVALID_ARGUMENT');
  assertError(
    await s.call('POST', `/registry/v2/repos/${org}`, 'name=x', { 'content-type': 'text/plain' }),
    415,
    3,
    'INVALID_ARGUMENT',
  );
  assertError(
    await s.call('POST', `/registry/v2/repos/${org}`, JSON.stringify({ name: 'x', description: 'y'.repeat(1100000) })),
    413,
    3,
    'INVALID_ARGUMENT',
  );
  assertError(await s.call('POST', `/registry/v2/repos/${org}`, '[1,2]', json), 400, 3, 'INVALID_ARGUMENT');
  assertError(await s.call('GET', '/registry/v2/nothing'), 404, 5, 'NOT_FOUND');
  const method = await s.call('PUT', '/registry/v2/repos');
  assertError(method, 405, 12, 'UNIMPLEMENTED');
  assert.is(method.headers.get('allow'), 'GET');
  const list = await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}&name=nobody`);
  assert.is(list.status, 200);
  assert.equal(list.body, { repos: [], nextPageToken: '', totalCount: '0', skipped: 0 });
});

test('concurrent writes are all acknowledged and all kept', async () => {
  const g = await newGroup(org, 'concurrent');
  const replies = await Promise.all(
    Array.from({ length: 60 }, (_, i) => s.call('POST', `/registry/v2/repos/${g}`, { name: `c${i}` })),
  );
  assert.equal(
    replies.map((r) => r.status),
    replies.map(() => 200),
  );
  const list = await s.call('GET', `/registry/v2/repos?uidp.children_of=${g}&page_size=200`);
  assert.is(list.body.totalCount, '60');
});

test('concurrent writes committed together: one refused inside the transaction leaves the others kept', async () => {
  const g = await newGroup(org, 'refused-among-many');
  // A well-formed parent that does not exist passes authorization (it is under org) and is refused only
  // inside the transaction, where the writes arriving together share one commit.
  const missing = `${g}/0123456789abcdef`;
  const replies = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      s.call('POST', `/registry/v2/repos/${i % 4 === 1 ? missing : g}`, { name: `m${i}` }),
    ),
  );
  assert.equal(
    replies.map((r) => r.status),
    replies.map((_, i) => (i % 4 === 1 ? 404 : 200)),
  );
  const list = await s.call('GET', `/registry/v2/repos?uidp.children_of=${g}&page_size=200`);
  assert.is(list.body.totalCount, '30');
  assert.equal(
    list.body.repos.map((r: { name: string }) => r.name).sort(),
    replies.flatMap((r) => (r.status === 200 ? [r.body.name] : [])).sort(),
    'exactly the answered writes are stored',
  );
});

test('read-modify-write: what a get answers, sent back whole, updates nothing it should not', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'rmw' })).body;
  const identity = (await s.call('POST', `/iam/v2/identities/${org}`, { name: 'rmw' })).body;
  const viewer = (await s.call('GET', '/iam/v2/roles?name=viewer')).body.roles[0].uid;
  const binding = (await s.call('POST', `/iam/v2/roleBindings/${org}`, { identityUid: identity.uid, roleUid: viewer }))
    .body;
  assert.ok(binding.identity && binding.group && binding.role, 'a binding answers hydrated');
  assert.is(binding.updateTime, undefined, 'and without updateTime');
  for (const [path, got] of [
    [`/registry/v2/repos/${repo.uid}`, repo],
    [`/iam/v2/identities/${identity.uid}`, identity],
    [`/iam/v2/roleBindings/${binding.uid}`, binding],
    [`/iam/v2/groups/${org}`, (await s.call('GET', `/iam/v2/groups/${org}`)).body],
  ]) {
    const sent = { ...got, description: 'changed', uid: 'ignored', createTime: '2000-01-01T00:00:00.000Z' };
    if (path.includes('roleBindings')) delete sent.description;
    const r = await s.call('PATCH', path, sent);
    assert.is(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.uid, got.uid, path);
    assert.is(r.body.createTime, got.createTime, `${path}: output only, ignored`);
    if (!path.includes('roleBindings')) assert.is(r.body.description, 'changed', path);
  }
});

test('the OpenAPI document is served', async () => {
  const r = await s.call('GET', '/openapi.json');
  assert.is(r.status, 200);
  assert.is(r.body.openapi, '3.1.0');
  assert.ok(r.body.paths['/registry/v2/repos/{uid}'].patch);
  assert.ok(r.body.paths['/iam/v2/identities/{uid}'].post, 'a create names its parent {uid}, as the reference does');
  assert.equal(r.body.servers, [{ url: s.url }], 'the document names the server that serves it');
});

test.run();
