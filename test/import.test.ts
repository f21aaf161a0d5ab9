// npm run import: sample data loads through the generated validators and each read-only endpoint serves it.
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { query } from './support/db.js';
import { runScript } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

let s: TestServer;
let org: string;

test.before(async () => {
  s = await startTestServer();
  org = await createOrg(s);
  for (const name of ['nginx', 'python']) await s.call('POST', `/registry/v2/repos/${org}`, { name });
});
test.after(async () => s.stop());

const importFile = (resource: string, file: string, ...args: string[]) =>
  runScript('scripts/import.ts', [resource, file, ...args], s.env);

const samples: [resource: string, file: string, table: string][] = [
  ['advisories', 'samples/advisories.json', 'advisories'],
  ['artifacts', 'samples/artifacts.ndjson', 'artifacts'],
  ['artifactVersions', 'samples/artifactVersions.json', 'artifact_versions'],
  ['images', 'samples/images.json', 'images'],
  ['vulnReports', 'samples/vulnReports.json', 'vuln_reports'],
  ['documents', 'samples/documents.json', 'documents'],
  ['vulnerabilityMetadata', 'samples/vulnerabilityMetadata.json', 'vulnerability_metadata'],
  ['resolvedVulnsReports', 'samples/resolvedVulnsReports.json', 'resolved_vulns_reports'],
];

/** What is stored, as an operator would read it: every record's uid and create time. */
const stored = (table: string) => query(s, `select uid, create_time from ${table} order by uid`);

test('every sample file imports with a count, while the server runs', async () => {
  for (const [resource, file, table] of samples) {
    const r = await importFile(resource, file, '--parent', org);
    assert.is(r.status, 0, r.stderr);
    const n = (await stored(table)).length;
    assert.ok(n > 0, resource);
    assert.match(r.stdout, new RegExp(`imported ${n} ${resource}: ${n} created, 0 updated`));
  }
});

test('importing the same file again adds nothing: the same records, with the same uids, all updated', async () => {
  for (const [resource, file, table] of samples) {
    const before = await stored(table);
    const r = await importFile(resource, file, '--parent', org);
    assert.is(r.status, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(`imported ${before.length} ${resource}: 0 created, ${before.length} updated`),
      resource,
    );
    assert.equal(await stored(table), before, `${resource}: same uids and create times`);
  }
  assert.is(
    (await s.call('GET', `/vulnerabilities/v2/advisories?uidp.descendants_of=${org}`)).body.totalCount,
    String(JSON.parse(readFileSync('samples/advisories.json', 'utf8')).length),
  );
});

test('a record found by its natural key is replaced in place; a new key is created beside it', async () => {
  const file = `${s.dataDir}/metadata.json`;
  writeFileSync(file, JSON.stringify([{ id: 'CVE-2099-0001', summary: 'first', details: 'to be cleared' }]));
  assert.match((await importFile('vulnerabilityMetadata', file)).stdout, /1 created, 0 updated/);
  const [first] = (await s.call('GET', '/advisory/v2/metadata?id=CVE-2099-0001')).body.vulnerabilityMetadata;
  writeFileSync(
    file,
    JSON.stringify([
      { id: 'CVE-2099-0001', summary: 'second' },
      { id: 'CVE-2099-0002', summary: 'new' },
    ]),
  );
  assert.match(
    (await importFile('vulnerabilityMetadata', file)).stdout,
    /imported 2 vulnerabilityMetadata: 1 created, 1 updated/,
  );
  const [again] = (await s.call('GET', '/advisory/v2/metadata?id=CVE-2099-0001')).body.vulnerabilityMetadata;
  assert.is(again.uid, first.uid, 'the uid stays');
  assert.is(again.createTime, first.createTime, 'so does the create time');
  assert.is(again.summary, 'second');
  assert.is(again.details, undefined, 'the file is the whole record: what it leaves out is cleared');
  assert.is((await s.call('GET', '/advisory/v2/metadata?ids=CVE-2099-0001,CVE-2099-0002')).body.totalCount, '2');
});

test('a file with a key twice, or a record without its key, loads nothing; a resource without a natural key is not imported', async () => {
  const file = `${s.dataDir}/keys.ndjson`;
  const before = (await s.call('GET', '/libraries/v2/artifacts')).body.totalCount;
  writeFileSync(
    file,
    '{"name":"twice","ecosystem":"ECOSYSTEM_JAVA"}\n{"name":"other","ecosystem":"ECOSYSTEM_JAVA"}\n{"name":"twice","ecosystem":"ECOSYSTEM_JAVA"}\n',
  );
  const twice = await importFile('artifacts', file);
  assert.is(twice.status, 1);
  assert.match(twice.stderr, /record 3: the same ecosystem, name as record 1/);
  writeFileSync(file, '{"name":"no-ecosystem"}\n');
  const keyless = await importFile('artifacts', file);
  assert.is(keyless.status, 1);
  assert.match(keyless.stderr, /record 1: ecosystem: ecosystem is part of the natural key/);
  assert.is((await s.call('GET', '/libraries/v2/artifacts')).body.totalCount, before, 'nothing imported');
  const groups = await importFile('groups', file);
  assert.is(groups.status, 1);
  assert.match(groups.stderr, /groups declares no naturalKey/);
});

test('a large file is written in steps: the server keeps creating meanwhile, and the counts stay exact', async () => {
  const group = (await s.call('POST', `/iam/v2/groups/${org}`, { name: 'bulk' })).body.uid;
  const file = `${s.dataDir}/bulk.ndjson`;
  const size = 40_000;
  writeFileSync(file, Array.from({ length: size }, (_, i) => JSON.stringify({ name: `bulk-${i}` })).join('\n'));
  let finished = false;
  const importing = importFile('repos', file, '--parent', group).finally(() => (finished = true));
  let beside = 0;
  while (!finished) {
    const created = await s.call('POST', `/registry/v2/repos/${group}`, { name: `beside-${beside}` });
    assert.is(created.status, 200, JSON.stringify(created.body));
    beside++;
  }
  const r = await importing;
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, `imported ${size} repos: ${size} created, 0 updated`);
  assert.ok(beside > 1, 'the server created records while the import ran');
  const [{ n }] = await query(s, `select count(*) n from repos where parent_uid = ?`, [group]);
  assert.is(n, size + beside);
  const list = (path: string) => s.call('GET', `/registry/v2/repos?${path}&page_size=1`);
  assert.is((await list(`uidp.children_of=${group}`)).body.totalCount, String(n));
  assert.is((await list(`uidp.descendants_of=${group}`)).body.totalCount, String(n));
  const [all] = await query(s, `select count(*) n from repos where uid like ?`, [`${org}/%`]);
  assert.is((await list(`uidp.descendants_of=${org}`)).body.totalCount, String(all.n));
  const again = await importFile('repos', file, '--parent', group);
  assert.match(again.stdout, `imported ${size} repos: 0 created, ${size} updated`);
});

test('advisories: list with any-of filters, get by uid', async () => {
  const samples = JSON.parse(readFileSync('samples/advisories.json', 'utf8'));
  const all = await s.call('GET', `/vulnerabilities/v2/advisories?uidp.descendants_of=${org}`);
  assert.is(all.body.totalCount, String(samples.length));
  const ids = [samples[0].advisoryId, samples[1].advisoryId];
  const some = await s.call('GET', `/vulnerabilities/v2/advisories?advisoryIds=${ids[0]}&advisoryIds=${ids[1]}`);
  assert.equal(some.body.advisories.map((a: any) => a.advisoryId).sort(), [...ids].sort());
  const byName = await s.call('GET', `/vulnerabilities/v2/advisories?artifactNames=${samples[0].artifactName}`);
  assert.ok(byName.body.advisories.every((a: any) => a.artifactName === samples[0].artifactName));
  const one = await s.call('GET', `/vulnerabilities/v2/advisories/${some.body.advisories[0].uid}`);
  assert.equal(one.body, some.body.advisories[0]);
  assert.equal(one.body.aliases, samples.find((a: any) => a.advisoryId === one.body.advisoryId).aliases);
});

test('libraries: artifacts by ecosystem, versions of one artifact, counts', async () => {
  const python = await s.call('GET', '/libraries/v2/artifacts?ecosystems=ECOSYSTEM_PYTHON');
  assert.ok(python.body.artifacts.length > 0);
  assert.ok(python.body.artifacts.every((a: any) => a.ecosystem === 'ECOSYSTEM_PYTHON'));
  const names = python.body.artifacts.map((a: any) => a.name);
  assert.equal(names, [...names].sort(), 'artifacts are ordered by name');
  const requests = python.body.artifacts.find((a: any) => a.name === 'requests');
  const versions = await s.call('GET', `/libraries/v2/artifacts/${requests.uid}/versions`);
  const expected = JSON.parse(readFileSync('samples/artifactVersions.json', 'utf8')).filter(
    (v: any) => v.parent === '$artifact:requests',
  );
  assert.is(versions.body.totalCount, String(expected.length));
  assert.ok(versions.body.artifactVersions.every((v: any) => v.name === 'requests'));
  const count = await s.call(
    'GET',
    '/libraries/v2/artifacts/count?ecosystems=ECOSYSTEM_PYTHON&ecosystems=ECOSYSTEM_JAVA',
  );
  const lines = readFileSync('samples/artifacts.ndjson', 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(
    count.body.counts,
    ['ECOSYSTEM_JAVA', 'ECOSYSTEM_PYTHON'].map((e) => ({
      ecosystem: e,
      totalCount: String(lines.filter((l) => l.ecosystem === e).length),
    })),
  );
  assert.is((await s.call('GET', '/libraries/v2/artifacts/count')).status, 400, 'ecosystems is required');
});

test('images: architectures and size of a digest in a repo', async () => {
  const image = JSON.parse(readFileSync('samples/images.json', 'utf8'))[0];
  const repo = (await s.call('GET', `/registry/v2/repos?name=${image.parent.split(':')[1]}`)).body.repos[0];
  const arch = await s.call('GET', `/registry/v2/repos/${repo.uid}/digests/${image.digest}/architectures`);
  assert.equal(arch.body, { architectures: [...image.architectures].sort() });
  const size = await s.call(
    'GET',
    `/registry/v2/repos/${repo.uid}/digests/${image.digest}/size?architecture=${image.architectures[0]}`,
  );
  assert.equal(size.body, { architecture: image.architectures[0], size: image.sizes[image.architectures[0]] });
  const missing = await s.call('GET', `/registry/v2/repos/${repo.uid}/digests/sha256:${'0'.repeat(64)}/architectures`);
  assert.is(missing.status, 404);
});

test('advisory feed: documents, vulnerability metadata, resolved-vulnerability reports', async () => {
  const docs = JSON.parse(readFileSync('samples/documents.json', 'utf8'));
  const d = await s.call('GET', `/advisory/v2/documents?id=${docs[0].id}`);
  assert.equal(
    d.body.documents.map((x: any) => x.id),
    [docs[0].id],
  );
  const meta = JSON.parse(readFileSync('samples/vulnerabilityMetadata.json', 'utf8'));
  const m = await s.call('GET', `/advisory/v2/metadata?ids=${meta[0].id},${meta[1].id}`);
  assert.equal(m.body.vulnerabilityMetadata.map((x: any) => x.id).sort(), [meta[0].id, meta[1].id].sort());
  const reports = JSON.parse(readFileSync('samples/resolvedVulnsReports.json', 'utf8'));
  const dates = reports.map((x: any) => x.date).sort();
  const r = await s.call('GET', `/advisory/v2/images/resolvedVulns?startTime=${dates[1]}`);
  assert.equal(r.body.resolvedVulnsReports.map((x: any) => x.date).sort(), dates.slice(1));
});

test('a bad record fails the whole file with the record and field named', async () => {
  const before = (await s.call('GET', '/libraries/v2/artifacts')).body.totalCount;
  const file = `${s.dataDir}/bad.ndjson`;
  writeFileSync(file, '{"name":"ok-one","ecosystem":"ECOSYSTEM_JAVA"}\n{"name":"bad","ecosystem":"ECOSYSTEM_COBOL"}\n');
  const r = await importFile('artifacts', file);
  assert.is(r.status, 1);
  assert.match(r.stderr, /record 2: ecosystem must be one of/);
  assert.not.match(r.stderr, /\n\s+at /);
  assert.is((await s.call('GET', '/libraries/v2/artifacts')).body.totalCount, before, 'nothing imported');
  const unknown = await importFile('gizmos', file);
  assert.is(unknown.status, 1);
  assert.match(unknown.stderr, /usage: npm run import -- <resource> <file>/);
  // Only what can be imported is offered: resources with a natural key.
  const offered = /resources that can be imported: (.*)/.exec(unknown.stderr)![1].split(', ');
  assert.ok(offered.includes('advisories') && offered.includes('artifacts'), offered.join());
  assert.not.ok(offered.includes('groups') || offered.includes('roleBindings'), offered.join());
  const orphan = await importFile('advisories', 'samples/advisories.json', '--parent', `${'a'.repeat(40)}`);
  assert.is(orphan.status, 1);
  assert.match(orphan.stderr, /nothing was imported/);
});

test('"$repo:name" is looked up within the file\'s organization alone, never in another tenant', async () => {
  const other = await createOrg(s, 'other-tenant');
  const repoIn = async (group: string, name: string) =>
    (await s.call('POST', `/registry/v2/repos/${group}`, { name })).body.uid as string;
  const theirs = await repoIn(other, 'nginx');
  const onlyTheirs = await repoIn(other, 'theirs-only');
  const ours = (await s.call('GET', `/registry/v2/repos?uidp.children_of=${org}&name=nginx`)).body.repos[0].uid;
  const file = `${s.dataDir}/tenant-images.json`;
  const image = (parent: string, digit: string) => ({
    parent,
    digest: `sha256:${digit.repeat(64)}`,
    architectures: ['amd64'],
  });
  writeFileSync(file, JSON.stringify([image('$repo:nginx', 'e')]));
  const r = await importFile('images', file, '--parent', other);
  assert.is(r.status, 0, r.stderr);
  const stored = await query(s, 'select uid from images where digest = ?', [`sha256:${'e'.repeat(64)}`]);
  assert.is(stored.length, 1);
  assert.ok(stored[0].uid.startsWith(`${theirs}/`), "under the nginx of the file's organization");
  assert.not.ok(stored[0].uid.startsWith(`${ours}/`));
  // A name that only another tenant holds: refused, the record named, nothing written.
  writeFileSync(file, JSON.stringify([image('$repo:nginx', 'f'), image('$repo:theirs-only', 'f')]));
  const foreign = await importFile('images', file, '--parent', org);
  assert.is(foreign.status, 1);
  assert.match(foreign.stderr, `record 2: parent "$repo:theirs-only": no Repo named "theirs-only" in ${org}`);
  assert.is((await query(s, 'select uid from images where digest = ?', [`sha256:${'f'.repeat(64)}`])).length, 0);
  assert.is((await query(s, 'select uid from images where uid like ?', [`${onlyTheirs}/%`])).length, 0);
  // Several organizations and no --parent: which one is not guessed.
  const unsaid = await importFile('images', file);
  assert.is(unsaid.status, 1);
  assert.match(unsaid.stderr, 'record 1: parent "$repo:nginx" needs --parent UID (there are several organizations)');
});

test.run();
