// Another process holding the database's write lock (an import's long transaction) makes our writes wait, not
// the server: reads and pings are answered meanwhile, and the waiting write lands once the lock is released.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer } from './support/server.js';

test('a write waits for another process holding the lock while the server keeps answering', async () => {
  const s = await startTestServer();
  const holder = new Database(join(s.dataDir, 'platform.sqlite'));
  try {
    const org = s.bootstrap.organization;
    holder.exec('begin immediate');
    let settled = false;
    const create = s.call('POST', `/registry/v2/repos/${org}`, { name: 'waits' }).finally(() => (settled = true));
    for (let i = 0; i < 5; i++) {
      assert.is((await s.call('GET', '/ping/v2/ping')).status, 200);
      assert.is((await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${org}`)).status, 200);
    }
    assert.is(settled, false, 'the write is still waiting for the lock');
    holder.exec('commit');
    const created = await create;
    assert.is(created.status, 200, JSON.stringify(created.body));
    assert.is((await s.call('GET', `/registry/v2/repos/${created.body.uid}`)).body.name, 'waits');
  } finally {
    holder.close();
    await s.stop();
  }
});

test.run();
