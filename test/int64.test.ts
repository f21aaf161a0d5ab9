// int64 fields: a JSON string or an exact JSON number in, always a string out, every int64 value kept exactly,
// and compared as numbers by filters, order and page cursors. test/fixtures/counters.yaml adds int64 fields to
// filter and order by; the spec's own int64 fields are checked through the import.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadGenerated } from '../server/server.js';
import { runScript } from './support/process.js';
import { startTestServer, type Reply, type TestServer } from './support/server.js';

const scratchRoot = join(process.cwd(), '.tmp');
mkdirSync(scratchRoot, { recursive: true });
const scratch = mkdtempSync(join(scratchRoot, 'int64-'));

let s: TestServer;
let org: string;
const max = '9223372036854775807';
const min = '-9223372036854775808';
const beyondDouble = '9007199254740993';

test.before(async () => {
  cpSync('spec', join(scratch, 'spec'), { recursive: true });
  cpSync('test/fixtures/counters.yaml', join(scratch, 'spec', 'counters.yaml'));
  const generated = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'generator/main.ts', '--spec', join(scratch, 'spec'), '--out', join(scratch, 'generated')],
    { encoding: 'utf8' },
  );
  if (generated.status !== 0) throw new Error(generated.stderr);
  s = await startTestServer(await loadGenerated(join(scratch, 'generated')));
  org = s.bootstrap.organization;
});
test.after(async () => {
  await s.stop();
  rmSync(scratch, { recursive: true, force: true });
});

function assertRefused(r: Reply, field: string, what: string) {
  assert.is(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, 3, what);
  const violations = r.body.details.find((d: any) => d.fieldViolations)?.fieldViolations ?? [];
  assert.ok(
    violations.some((v: any) => v.field === field),
    `${what}: names ${field}: ${JSON.stringify(violations)}`,
  );
}

const created: Record<string, string> = {};

test('accepted: decimal strings across the whole int64 range and exact JSON numbers; answered as canonical strings', async () => {
  const given: [string, unknown, string][] = [
    ['nine', '9', '9'],
    ['ten', 10, '10'],
    ['seven', '007', '7'],
    ['minus three', '-3', '-3'],
    ['max', max, max],
    ['min', min, min],
    ['beyond a double', beyondDouble, beyondDouble],
    ['largest exact number', Number.MAX_SAFE_INTEGER, String(Number.MAX_SAFE_INTEGER)],
  ];
  for (const [name, value, answer] of given) {
    const r = await s.call('POST', `/counters/v2/counters/${org}`, { name, value, history: [value, '1'] });
    assert.is(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.value, answer, name);
    assert.equal(r.body.history, [answer, '1'], `${name}: repeated`);
    assert.is(
      (await s.call('GET', `/counters/v2/counters/${r.body.uid}`)).body.value,
      answer,
      `${name}: read back exactly`,
    );
    created[name] = r.body.uid;
  }
  const patched = await s.call('PATCH', `/counters/v2/counters/${created.nine}`, { floor: '0' });
  assert.is(patched.body.floor, '0');
  assert.is(patched.body.value, '9', 'untouched');
});

test('refused with INVALID_ARGUMENT naming the field: inexact numbers, text outside int64, non-integers, declared bounds', async () => {
  const bodies: [string, string, string][] = [
    ['{"name":"x","value":9007199254740993}', 'value', 'a JSON number beyond 2^53'],
    ['{"name":"x","value":-9007199254740993}', 'value', 'a JSON number below -2^53'],
    ['{"name":"x","value":1e30}', 'value', 'a huge JSON number'],
    ['{"name":"x","value":"9223372036854775808"}', 'value', '2^63'],
    ['{"name":"x","value":"-9223372036854775809"}', 'value', '-2^63 - 1'],
    ['{"name":"x","value":"99999999999999999999"}', 'value', '20 digits'],
    ['{"name":"x","value":"1.5"}', 'value', 'a decimal fraction as text'],
    ['{"name":"x","value":1.5}', 'value', 'a fraction'],
    ['{"name":"x","value":"abc"}', 'value', 'text'],
    ['{"name":"x","value":""}', 'value', 'empty text'],
    ['{"name":"x","history":["1","9223372036854775808"]}', 'history.1', 'an item of a repeated field'],
    ['{"name":"x","floor":"-1"}', 'floor', 'text below the declared minimum'],
    ['{"name":"x","floor":-1}', 'floor', 'a number below the declared minimum'],
  ];
  for (const [body, field, what] of bodies) {
    const r = await s.call('POST', `/counters/v2/counters/${org}`, body);
    assertRefused(r, field, what);
    if (what.startsWith('a JSON number beyond')) assert.match(r.body.message, /string/, 'says to send a string');
  }
  assertRefused(
    await s.call('PATCH', `/counters/v2/counters/${created.nine}`, { value: '9223372036854775808' }),
    'value',
    'an update',
  );
  assertRefused(
    await s.call('PATCH', `/counters/v2/counters/${created.nine}`, { floor: '-5' }),
    'floor',
    'an update below the minimum',
  );
  assert.is((await s.call('GET', `/counters/v2/counters/${created.nine}`)).body.value, '9', 'nothing changed');
});

const numeric = ['min', 'minus three', 'seven', 'nine', 'ten', 'largest exact number', 'beyond a double', 'max'];

async function names(query: string): Promise<string[]> {
  const out: string[] = [];
  let token = '';
  do {
    const r = await s.call(
      'GET',
      `/counters/v2/counters?${query}&page_size=2${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
    );
    assert.is(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
    out.push(...r.body.counters.map((c: any) => c.name));
    token = r.body.nextPageToken;
  } while (token);
  return out;
}

test('order_by an int64 field is numeric order, page by page', async () => {
  assert.equal(await names('order_by=value'), numeric);
  assert.equal(await names('order_by=value%20desc'), [...numeric].reverse());
});

test('range and equality filters compare numbers, also beside a page cursor on the same field', async () => {
  assert.equal(await names('order_by=value&minValue=9'), numeric.slice(3));
  assert.equal(await names('order_by=value&maxValue=10'), numeric.slice(0, 5));
  assert.equal(await names('order_by=value&minValue=-3&maxValue=9'), ['minus three', 'seven', 'nine']);
  assert.equal(await names(`order_by=value&minValue=${beyondDouble}`), ['beyond a double', 'max']);
  assert.equal(await names(`order_by=value%20desc&maxValue=${Number.MAX_SAFE_INTEGER}`), numeric.slice(0, 6).reverse());
  assert.equal(await names('order_by=value&value=0007'), ['seven']);
  assert.equal(await names(`order_by=value&values=10&values=${beyondDouble}`), ['ten', 'beyond a double']);
  for (const bad of ['abc', '9223372036854775808', '1.5']) {
    assertRefused(await s.call('GET', `/counters/v2/counters?minValue=${bad}`), 'minValue', `minValue=${bad}`);
  }
});

test("the spec's int64 fields: imported exactly, listed as strings; out of range or below a declared minimum refused by name", async () => {
  const artifacts = join(scratch, 'artifact.ndjson');
  writeFileSync(artifacts, JSON.stringify({ name: 'big', ecosystem: 'ECOSYSTEM_JAVA' }));
  const imported = await runScript('scripts/import.ts', ['artifacts', artifacts], s.env);
  assert.is(imported.status, 0, imported.stderr);
  const versions = join(scratch, 'versions.json');
  const load = (records: unknown[]) => {
    writeFileSync(versions, JSON.stringify(records));
    return runScript('scripts/import.ts', ['artifactVersions', versions], s.env);
  };
  const ok = await load([
    { parent: '$artifact:big', version: '1', sizeBytes: beyondDouble },
    { parent: '$artifact:big', version: '2', sizeBytes: 12 },
  ]);
  assert.is(ok.status, 0, ok.stderr);
  const artifact = (await s.call('GET', '/libraries/v2/artifacts?query=big')).body.artifacts[0];
  const listed = await s.call('GET', `/libraries/v2/artifacts/${artifact.uid}/versions?order_by=version`);
  assert.equal(
    listed.body.artifactVersions.map((v: any) => v.sizeBytes),
    [beyondDouble, '12'],
  );
  for (const [sizeBytes, what] of [
    ['-1', 'below the minimum'],
    [min, 'far below the minimum'],
    ['9223372036854775808', 'beyond int64'],
  ]) {
    const refused = await load([{ parent: '$artifact:big', version: '3', sizeBytes }]);
    assert.is(refused.status, 1, what);
    assert.match(refused.stderr, /sizeBytes/, what);
    assert.match(refused.stderr, /nothing was imported/, what);
  }
  const beyond = join(scratch, 'number.json');
  writeFileSync(beyond, '[{"parent":"$artifact:big","version":"4","sizeBytes":9007199254740993}]');
  const inexact = await runScript('scripts/import.ts', ['artifactVersions', beyond], s.env);
  assert.is(inexact.status, 1);
  assert.match(inexact.stderr, /record 1: sizeBytes must be sent as a string/);
});

test.run();
