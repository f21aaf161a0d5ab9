// What a request may say and how it is read: contains filters match text literally.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runScript } from './support/process.js';
import { startTestServer, type TestServer } from './support/server.js';

let s: TestServer;

test.before(async () => {
  s = await startTestServer();
});
test.after(async () => s.stop());

test('a contains filter matches %, _ and \\ as themselves, not as wildcards', async () => {
  const names = ['under_score', 'underXscore', '100%', '1000', 'back\\slash', 'backXslash'];
  const file = join(s.dataDir, 'wildcards.ndjson');
  writeFileSync(file, names.map((name) => JSON.stringify({ name, ecosystem: 'ECOSYSTEM_PYTHON' })).join('\n'));
  const imported = await runScript('scripts/import.ts', ['artifacts', file], { DATA_DIR: s.dataDir });
  assert.is(imported.status, 0, imported.stderr);
  const search = async (query: string) => {
    const r = await s.call('GET', `/libraries/v2/artifacts?query=${encodeURIComponent(query)}`);
    assert.is(r.status, 200, JSON.stringify(r.body));
    return r.body.artifacts.map((a: any) => a.name).sort();
  };
  assert.equal(await search('_'), ['under_score']);
  assert.equal(await search('r_s'), ['under_score']);
  assert.equal(await search('%'), ['100%']);
  assert.equal(await search('0%'), ['100%']);
  assert.equal(await search('\\'), ['back\\slash']);
  assert.equal(await search('score'), ['underXscore', 'under_score'], 'plain text still matches anywhere in the name');
  assert.equal(await search('SCORE'), ['underXscore', 'under_score'], 'and ignores case');
});

test.run();
