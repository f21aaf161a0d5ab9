// kill -9 of one instance during writes (issue 29, 6(c)): three server processes on one PostgreSQL database,
// clients writing through all of them; one is killed with SIGKILL mid-writes. Every write that was answered
// 200 is in the database afterwards (a commit is durable before its answer), the writes cut off with the process
// left nothing half-made (counts still equal count(*)), and the other instances go on serving.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readBootstrap } from '../runtime/access/bootstrap.js';
import { readConfig } from '../runtime/operate/config.js';
import { query } from './support/db.js';
import { newDatabase, stopOwnCluster } from './support/postgres.js';
import { exitOf, runScript, spawnServer, type ServerProcess } from './support/process.js';

let dataDir: string;
let servers: ServerProcess[] = [];

test.after(async () => {
  const running = servers.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
  for (const s of running) s.child.kill('SIGTERM');
  await Promise.all(running.map((s) => exitOf(s.child)));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  await stopOwnCluster();
});

test('an instance killed with SIGKILL mid-writes loses no acknowledged write; the others go on serving', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'platform-api-kill-'));
  const env = { PORT: '0', DATA_DIR: dataDir, ISSUER_URL: 'http://platform.test', DATABASE_URL: await newDatabase() };
  const database = { database: readConfig(env).database };
  servers = [await spawnServer(env)];
  servers.push(...(await Promise.all([spawnServer(env), spawnServer(env)])));
  const org = readBootstrap(dataDir)!.organization;
  const token = await runScript('scripts/token.ts', [], env);
  assert.is(token.status, 0, token.stderr);
  const headers = { authorization: `Bearer ${token.stdout.trim()}`, 'content-type': 'application/json' };

  const acknowledged: string[] = [];
  const problems: string[] = [];
  let killed = false;
  // A client: creates through instance n until told to stop; a connection cut by the kill is no answer.
  const client = async (n: number, id: number) => {
    for (let i = 0; !(killed && n === 0) && acknowledged.length < 240; i++) {
      try {
        const res = await fetch(`${servers[n].url}/registry/v2/repos/${org}`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: `r-${id}-${i}` }),
        });
        const body = await res.json();
        if (res.status === 200) acknowledged.push(body.uid);
        else if (res.status !== 503) problems.push(`${res.status} ${JSON.stringify(body)}`);
      } catch (e) {
        // Only the killed instance drops connections.
        if (n !== 0 || !killed) problems.push(`instance ${n}: ${(e as Error).message}`);
      }
    }
  };
  const clients = Array.from({ length: 9 }, (_, id) => client(id % 3, id));
  // Killed once it has taken some writes: others are in flight on it then.
  while (acknowledged.length < 40) await new Promise((resolve) => setTimeout(resolve, 10));
  servers[0].child.kill('SIGKILL');
  killed = true;
  await exitOf(servers[0].child);
  await Promise.all(clients);
  assert.equal(problems, [], 'only 200s and 503s, and connections cut only by the killed instance');

  // The survivors still answer reads and writes.
  for (const s of servers.slice(1)) {
    const res = await fetch(`${s.url}/registry/v2/repos/${org}`, { method: 'POST', headers, body: '{"name":"after"}' });
    assert.ok(res.status === 200 || res.status === 409, String(res.status));
    assert.is((await fetch(`${s.url}/registry/v2/repos?uidp.descendants_of=${org}`, { headers })).status, 200);
  }
  const stored = new Set(
    (await query(database, 'select uid from repos where parent_uid = ?', [org])).map((r) => r.uid as string),
  );
  const lost = acknowledged.filter((uid) => !stored.has(uid));
  assert.equal(lost, [], 'every acknowledged write is stored');
  // Nothing half-made by the transactions the kill cut off: the kept counts are the rows'.
  const [{ n }] = await query(database, 'select count(*) as n from repos');
  const [{ below }] = await query(
    database,
    "select sum(below) as below from scope_counts where collection = 'repos' and (scope = '' or scope like '#%')",
  );
  assert.is(Number(below), Number(n));
});

test.run();
