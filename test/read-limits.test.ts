// Reads an anonymous caller could make expensive, each bounded: a list parameter's values (and the statements
// they make), a read's time, the reads waiting for the database, a list without paging (v1) and skip.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { query } from './support/db.js';
import { grpcClient } from './support/grpc-client.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

/** The default limits, but v1 lists answer at most 3 records. */
let s: TestServer;
/** Over one database of many artifacts: reads stopped after 5 ms, and reads allowed to wait only one at a time. */
let slow: TestServer;
let queued: TestServer;
const artifacts = 200_000;

/** Many artifacts written straight into the database: far more than a read can scan in 5 ms. */
async function seedArtifacts(t: TestServer): Promise<void> {
  const columns = 'uid, parent_uid, create_time, update_time, name, ecosystem, version_count';
  const time = "'2024-01-01T00:00:00.000Z'";
  await query(
    t,
    t.database.engine === 'postgresql'
      ? `insert into artifacts (${columns}) select lpad(to_hex(i), 40, '0'), null, ${time}, ${time}, ` +
          `'artifact number ' || i, 'ECOSYSTEM_PYTHON', 1 from generate_series(1, ${artifacts}) as i`
      : `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${artifacts}) ` +
          `insert into artifacts (${columns}) select printf('%040x', i), null, ${time}, ${time}, ` +
          `'artifact number ' || i, 'ECOSYSTEM_PYTHON', 1 from n`,
    [],
    true,
  );
  // As autovacuum soon would: the planner learns the table is large, and pages it by its index.
  if (t.database.engine === 'postgresql') await query(t, 'analyze artifacts');
}

test.before(async () => {
  s = await startTestServer(undefined, { V1_LIST_MAX: '3' });
  slow = await startTestServer(undefined, { READ_TIMEOUT_MS: '5' });
  await seedArtifacts(slow);
  // The same database as slow's (its env names it), with the default timeout.
  queued = await startTestServer(undefined, { ...slow.env, READ_QUEUE: '1' });
});
test.after(async () => {
  await queued?.stop();
  await slow?.stop();
  await s?.stop();
});

const anonymous = { authorization: '' };
const values = (n: number, prefix = 'v') => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(',');

function refusedList(r: Reply, field: string, what: string): void {
  assert.is(r.status, 400, `${what}: ${JSON.stringify(r.body).slice(0, 300)}`);
  const bad = r.body.details?.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
  assert.is(bad?.fieldViolations?.[0]?.field, field, what);
  assert.match(bad.fieldViolations[0].description, 'at most 1000 distinct values');
}

test('a list parameter holds at most 1,000 distinct values, on v2, v1 and gRPC alike', async () => {
  const metadata = await s.call('GET', `/advisory/v2/metadata?ids=${values(1000)}`, undefined, anonymous);
  assert.is(metadata.status, 200, JSON.stringify(metadata.body).slice(0, 300));
  refusedList(
    await s.call('GET', `/advisory/v2/metadata?ids=${values(1001)}`, undefined, anonymous),
    'ids',
    '1,001 ids',
  );
  assert.is((await s.call('GET', `/registry/v2/repos?uidp.ids=${values(1000, 'u')}`)).status, 200);
  refusedList(await s.call('GET', `/registry/v2/repos?uidp.ids=${values(1001, 'u')}`), 'uidp.ids', '1,001 uids');
  // Repeated values count once: 1,001 values of which 1,000 differ are within the limit.
  assert.is((await s.call('GET', `/registry/v2/repos?uidp.ids=${values(1000, 'u')},u0`)).status, 200);
  const v1 = await s.call('GET', `/registry/v1/repos?uidp.ids=${values(1001, 'u')}`);
  assert.is(v1.status, 400, 'v1');
  assert.match(v1.body.message, 'uidp.ids: at most 1000 distinct values');
  // v1's own id, repeated or comma-separated, is counted and refused under its own name.
  for (const query of [
    `id=${values(1001, 'u')}`,
    values(1001, 'u')
      .split(',')
      .map((v) => `id=${v}`)
      .join('&'),
  ]) {
    const byId = await s.call('GET', `/iam/v1/identities?${query}`);
    assert.is(byId.status, 400, JSON.stringify(byId.body).slice(0, 200));
    assert.match(byId.body.message, 'id: at most 1000 distinct values');
  }
  const grpc = grpcClient(s.url, '');
  try {
    for (const n of [1001, 40_000]) {
      const r = await grpc.call('advisory.v2.SecurityAdvisoryService', 'ListVulnerabilityMetadata', {
        ids: Array.from({ length: n }, (_, i) => `CVE-2024-${i}`),
      });
      assert.is(r.code, 3, `${n} ids over gRPC: ${r.message}`);
      assert.ok(r.details.some((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest'));
    }
    const fine = await grpc.call('advisory.v2.SecurityAdvisoryService', 'ListVulnerabilityMetadata', {
      ids: Array.from({ length: 1000 }, (_, i) => `CVE-2024-${i}`),
    });
    assert.is(fine.code, 0, fine.message);
  } finally {
    grpc.close();
  }
});

test('lists of every length share their statements: the statements kept do not grow with the lengths', async () => {
  const read = async () => {
    for (let n = 2; n <= 61; n++) {
      const lists = [
        s.call('GET', `/advisory/v2/metadata?ids=${values(n)}`, undefined, anonymous),
        s.call('GET', `/registry/v2/repos?uidp.ids=${values(n, 'u')}`),
        s.call('GET', '/libraries/v2/artifacts?ecosystems=ECOSYSTEM_JAVA&ecosystems=ECOSYSTEM_PYTHON'),
      ];
      for (const r of await Promise.all(lists)) assert.is(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    }
  };
  await read();
  const before = await s.statementsKept();
  await read();
  const after = await s.statementsKept();
  assert.is(after, before, `60 lengths of three lists, read again, keep no more statements (${before} -> ${after})`);
  // The first round too: a handful of statement shapes, not one per length.
  const fresh = await startTestServer(undefined, { ...s.env });
  try {
    const start = await fresh.statementsKept();
    for (let n = 2; n <= 61; n++)
      assert.is((await fresh.call('GET', `/advisory/v2/metadata?ids=${values(n)}`, undefined, anonymous)).status, 200);
    // A handful of shapes (the page and its count, on the request thread or the read worker), never one per
    // length: with a statement per length this is 60 or more.
    const grown = (await fresh.statementsKept()) - start;
    assert.ok(grown <= 10, `60 lengths of one list made ${grown} statements`);
  } finally {
    await fresh.stop();
  }
});

test('a read past its time is DEADLINE_EXCEEDED, and the server goes on answering', async () => {
  for (const path of ['/libraries/v2/artifacts?query=no-such-name', '/libraries/v2/artifacts?skip=100000']) {
    const r = await slow.call('GET', path);
    assert.is(r.status, 504, `${path}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.code, 4);
    assert.match(r.body.message, 'Deadline exceeded: the read ran longer than 0.005 s');
    assert.not.match(JSON.stringify(r.body), /select |from artifacts|\n\s+at /i);
  }
  const grpc = grpcClient(slow.url, slow.token);
  try {
    const r = await grpc.call('libraries.v2.ArtifactsService', 'ListArtifacts', { query: 'no-such-name' });
    assert.is(r.code, 4, `over gRPC: ${r.message}`);
  } finally {
    grpc.close();
  }
  // Reads that need no long scan are answered meanwhile, on the same server (ordered by uid: on PostgreSQL an
  // order by a column that may be NULL, name, is not the order of its index, and sorts the table).
  const org = slow.bootstrap.organization;
  assert.is((await slow.call('GET', `/iam/v2/groups/${org}`)).status, 200);
  const page = await slow.call('GET', '/libraries/v2/artifacts?page_size=5&order_by=uid');
  assert.is(page.status, 200, JSON.stringify(page.body));
  assert.is(page.body.artifacts.length, 5);
  assert.is((await slow.call('GET', '/healthz')).status, 200);
  // The other server, with the default time, reads the same rows whole.
  const whole = await queued.call('GET', '/libraries/v2/artifacts?query=number%2012345&page_size=1');
  assert.is(whole.status, 200, JSON.stringify(whole.body));
  assert.is(whole.body.totalCount, '11', 'artifact number 12345 and 123450-123459');
});

test('past the reads allowed to wait, a read is refused with 503 and Retry-After, never queued without bound', async () => {
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) => queued.call('GET', `/libraries/v2/artifacts?query=nothing-${i}`)),
  );
  const statuses = answers.map((r) => r.status);
  assert.ok(
    statuses.every((status) => status === 200 || status === 503),
    statuses.join(' '),
  );
  const refused = answers.filter((r) => r.status === 503);
  assert.ok(refused.length > 0, `40 reads at once, one allowed to wait: some are refused (${statuses.join(' ')})`);
  for (const r of refused) {
    assert.is(r.body.code, 14);
    assert.is(r.headers.get('retry-after'), '1');
    assert.match(r.body.message, 'reads are already waiting for the database');
  }
  assert.is((await queued.call('GET', '/libraries/v2/artifacts?query=nothing')).status, 200, 'served again after');
});

test('a v1 list that does not page answers at most V1_LIST_MAX records, and says so past it', async () => {
  const org = s.bootstrap.organization;
  for (const name of ['a', 'b', 'c']) await s.call('POST', `/registry/v2/repos/${org}`, { name });
  const three = await s.call('GET', `/registry/v1/repos?uidp.children_of=${org}`);
  assert.is(three.status, 200, JSON.stringify(three.body));
  assert.is(three.body.items.length, 3);
  await s.call('POST', `/registry/v2/repos/${org}`, { name: 'd' });
  const four = await s.call('GET', `/registry/v1/repos?uidp.children_of=${org}`);
  assert.is(four.status, 400, JSON.stringify(four.body));
  assert.is(four.body.code, 9);
  assert.match(four.body.message, 'more than 3 repos match');
  // v2 pages the same records.
  assert.is((await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}`)).body.repos.length, 4);
});

test('skip is at most 100,000', async () => {
  assert.is((await s.call('GET', '/registry/v2/repos?skip=100000')).status, 200);
  const past = await s.call('GET', '/registry/v2/repos?skip=100001');
  assert.is(past.status, 400);
  assert.match(past.body.message, 'skip: must be a whole number no larger than 100000');
});

test.run();
