// Behaviours beyond plain CRUD, declared in the spec or hand-written: events, upserts, exclusive fields,
// references, terms, invites.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { query } from './support/db.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;

test.before(async () => {
  s = await startTestServer();
  org = s.bootstrap.organization;
});
test.after(async () => s.stop());

const events = (subject: string) =>
  query(s.dataDir, 'select type, subject, group_uid, actor, body from event_outbox where subject = ? order by seq', [subject]);

test('every create, update and delete records its event in the outbox, with actor and group', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'evented' })).body;
  await s.call('PATCH', `/registry/v2/repos/${repo.uid}`, { description: 'changed' });
  await s.call('PATCH', `/registry/v2/repos/${repo.uid}`, { colour: 'rejected' });
  await s.call('DELETE', `/registry/v2/repos/${repo.uid}`);
  const rows = await events(repo.uid);
  assert.equal(rows.map((r) => r.type), [
    'dev.chainguard.api.platform.registry.repo.created.v1',
    'dev.chainguard.api.platform.registry.repo.updated.v1',
    'dev.chainguard.api.platform.registry.repo.deleted.v1',
  ], 'a rejected update records nothing');
  assert.ok(rows.every((r) => r.group_uid === org && r.actor === s.bootstrap.owner));
  assert.is(JSON.parse(rows[1].body).description, 'changed');
  assert.equal(JSON.parse(rows[2].body), { uid: repo.uid });
});

test('a write refused by a precondition records no event', async () => {
  const g = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'busy' })).body;
  await s.call('POST', `/registry/v2/repos/${g.uid}`, { name: 'child' });
  assert.is((await s.call('DELETE', `/iam/v2/groups/${g.uid}`)).status, 400);
  assert.equal((await events(g.uid)).map((r) => r.type), ['dev.chainguard.api.iam.group.created.v1']);
});

test('the event of a tag names the group above its repo', async () => {
  const repo = (await s.call('POST', `/registry/v2/repos/${org}`, { name: 'tags' })).body;
  const tag = (await s.call('POST', `/registry/v2/tags/${repo.uid}`, { name: 'v1', digest: `sha256:${'1'.repeat(64)}` })).body;
  const [created] = await events(tag.uid);
  assert.is(created.type, 'dev.chainguard.api.platform.registry.tag.created.v1');
  assert.is(created.group_uid, org);
});

test.run();
