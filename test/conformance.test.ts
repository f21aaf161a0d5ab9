// The conformance suite, run as its CLI: it passes our server, and it catches planted defects by name.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ConformancePlan } from '../conformance/plan.js';
import type { RuleResult } from '../conformance/run.js';
import { httpDefectProxy } from './support/defect-proxies.js';
import { runScript } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

let s: TestServer;

test.before(async () => {
  // Enough subscriptions in one organization for the page size rules' 201.
  s = await startTestServer(undefined, { EVENTS_MAX_SUBSCRIPTIONS: '1000' });
  const org = await createOrg(s, 'data');
  for (const [resource, file] of [
    ['advisories', 'samples/advisories.json'],
    ['artifacts', 'samples/artifacts.ndjson'],
    ['artifactVersions', 'samples/artifactVersions.json'],
    ['documents', 'samples/documents.json'],
    ['vulnerabilityMetadata', 'samples/vulnerabilityMetadata.json'],
    ['resolvedVulnsReports', 'samples/resolvedVulnsReports.json'],
  ]) {
    const r = await runScript('scripts/import.ts', [resource, file, '--parent', org], s.env);
    if (r.status !== 0) throw new Error(r.stderr);
  }
  // A delivery, which only the server makes: a subscription of the organization and a change in it.
  const sub = await s.call('POST', `/events/v2/subscriptions/${org}`, { sink: 'http://127.0.0.1:9/conformance' });
  if (sub.status !== 200) throw new Error(JSON.stringify(sub.body));
  await s.call('POST', `/iam/v2/groups/${org}`, { name: 'changed' });
  for (let tries = 0; (await s.call('GET', '/events/v2/deliveries')).body.deliveries?.length === 0; tries++) {
    if (tries === 100) throw new Error('no delivery was made within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});
test.after(async () => s.stop());

interface SuiteRun {
  status: number | null;
  stdout: string;
  report: {
    passed: number;
    failed: number;
    skipped: number;
    results: RuleResult[];
  };
}

async function runSuite(baseUrl: string, ...args: string[]): Promise<SuiteRun> {
  const json = join(s.dataDir, `report-${Date.now()}.json`);
  const r = await runScript(
    'scripts/conformance.ts',
    ['--base-url', baseUrl, '--token', s.token, '--json', json, ...args],
    {},
  );
  return { status: r.status, stdout: r.stdout + r.stderr, report: JSON.parse(readFileSync(json, 'utf8')) };
}

test('our server passes the whole suite, and the suite leaves no data behind', async () => {
  const before = (await s.call('GET', '/iam/v2/groups')).body.totalCount;
  const { body: nobody } = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' });
  const run = await runSuite(s.url, '--low-privilege-token', await s.mint(nobody.uid));
  assert.is(run.status, 0, run.stdout);
  for (const rule of [
    'api/no-token-unauthenticated',
    'api/bad-token-unauthenticated',
    'api/low-privilege-permission-denied',
  ]) {
    assert.is(run.report.results.find((r) => r.name === rule)?.status, 'passed', rule);
  }
  assert.is(run.report.failed, 0);
  assert.ok(run.report.passed > 250, `passed ${run.report.passed}`);
  assert.match(run.stdout, /^\d+ passed, 0 failed, \d+ skipped$/m);
  const skipped = run.report.results.filter((r) => r.status === 'skipped').map((r) => r.name);
  assert.equal(skipped, [], 'the sample data gives every read-only rule something to check');
  assert.is((await s.call('GET', '/iam/v2/groups')).body.totalCount, before);
  assert.is((await s.call('GET', '/registry/v2/repos')).body.totalCount, '0');
  await s.call('DELETE', `/iam/v2/identities/${nobody.uid}`);
});

test('--protocol grpc runs the same rules over the gRPC surface, skipping only what gRPC cannot express', async () => {
  const { body: nobody } = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' });
  const run = await runSuite(s.url, '--protocol', 'grpc', '--low-privilege-token', await s.mint(nobody.uid));
  assert.is(run.status, 0, run.stdout);
  assert.is(run.report.failed, 0);
  const status = (name: string) => run.report.results.find((r) => r.name === name)?.status;
  for (const rule of [
    'registry.repos/create/returns-resource',
    'registry.repos/create/requires-name',
    'registry.repos/get/returns-created',
    'registry.repos/get/not-found-has-resource-info',
    'registry.repos/list/envelope',
    'registry.repos/list/page-walk-size-7',
    'registry.repos/list/page-token-bound-to-query',
    'registry.repos/list/children-of-vs-descendants-of',
    'registry.repos/update/mask-ignores-other-fields',
    'registry.repos/update/star-replaces',
    'registry.repos/update/unknown-mask-rejected',
    'registry.repos/delete/then-not-found',
    'iam.groups/delete/refused-when-not-empty',
    'iam.groupInvites/get/returns-created',
    'api/error-body-shape',
    'api/no-token-unauthenticated',
    'api/bad-token-unauthenticated',
    'api/low-privilege-permission-denied',
  ])
    assert.is(status(rule), 'passed', rule);
  // Headers and v1 (HTTP only), HTTP-only routes and bodies, list requests of the reference protos without paging, undeclared enum names,
  // and a field the message does not carry.
  const skipped = run.report.results.filter((r) => r.status === 'skipped').map((r) => r.name);
  assert.equal(skipped.sort(), [
    'advisory.documents/list/envelope',
    'advisory.documents/list/page-size-bounds',
    'advisory.resolvedVulnsReports/list/envelope',
    'advisory.resolvedVulnsReports/list/page-size-bounds',
    'api/json-answers',
    'api/malformed-json-invalid-argument',
    'api/unknown-route-not-found',
    'api/v1-beside-v2',
    'events.subscriptions/create/ignores-output-only',
    'iam.groups/create/rejects-invalid-kind',
    'iam.identities/create/rejects-invalid-servicePrincipal',
    'registry.repos/create/rejects-invalid-catalogTier',
    'registry.tags/create/ignores-output-only',
    'registry.tags/list/order-by-created_at',
    'registry.tags/list/order-by-created_at-desc',
  ]);
  assert.match(run.stdout, /^\d+ passed, 0 failed, 15 skipped$/m);
  assert.is((await s.call('GET', '/registry/v2/repos')).body.totalCount, '0', 'cleaned up over gRPC');
  await s.call('DELETE', `/iam/v2/identities/${nobody.uid}`);
});

test('--protocol takes http or grpc', async () => {
  const r = await runScript('scripts/conformance.ts', ['--base-url', s.url, '--protocol', 'soap'], {});
  assert.is(r.status, 2);
  assert.match(r.stderr, /^conformance: --protocol is http or grpc, not "soap"\n$/);
});

test('--filter, --parent and --skip-file narrow the run', async () => {
  const { body: parent } = await s.call('POST', '/iam/v2/groups', { name: 'given' });
  const skipFile = join(s.dataDir, 'known-failures.txt');
  writeFileSync(skipFile, '# known\nregistry.repos/list/skip\n');
  const run = await runSuite(s.url, '--filter', 'registry.repos/*', '--parent', parent.uid, '--skip-file', skipFile);
  assert.is(run.status, 0, run.stdout);
  assert.ok(run.report.results.every((r) => r.name.startsWith('registry.repos/')));
  assert.equal(
    run.report.results.filter((r) => r.status === 'skipped').map((r) => r.name),
    ['registry.repos/list/skip'],
  );
  assert.is(
    (await s.call('GET', `/registry/v2/repos?uidp.descendants_of=${parent.uid}`)).body.totalCount,
    '0',
    'cleaned up under the given parent',
  );
  assert.is((await s.call('GET', `/iam/v2/groups/${parent.uid}`)).status, 200, 'the given parent is kept');
});

test('an unreachable target fails clearly', async () => {
  const r = await runScript('scripts/conformance.ts', ['--base-url', 'http://127.0.0.1:9', '--wait', '1'], {});
  assert.is(r.status, 2);
  assert.match(r.stderr, /did not answer within 1 s/);
});

/** The failures and skips of the text report read back, each as the JSON report holds it. */
function readText(stdout: string): Record<string, unknown>[] {
  const results: Record<string, any>[] = [];
  for (const line of stdout.split('\n')) {
    const fail = /^FAIL (\S+)$/.exec(line);
    const skip = /^SKIP (\S+): (.*)$/.exec(line);
    const fact = /^ {2}(spec|decision|request|expected|actual|error): +(.*)$/.exec(line);
    if (fail) results.push({ name: fail[1], status: 'failed' });
    else if (skip) results.push({ name: skip[1], status: 'skipped', reason: skip[2] });
    else if (fact && results.length > 0) {
      const r = results[results.length - 1];
      const [, label, text] = fact;
      if (label === 'spec')
        r.spec = [...(r.spec ?? []), { id: text.split(': ')[0], says: text.slice(text.indexOf(': ') + 2) }];
      else r[label === 'error' ? 'reason' : label] = text;
    }
  }
  return results;
}

test('a failing target: the text report and --json carry the same facts, the summary line last, exit 1', async () => {
  // Groups and roles still work (the suite makes its own group to hold what it creates), nothing else does.
  const plan = JSON.parse(readFileSync('generated/conformance/plan.json', 'utf8')) as ConformancePlan;
  const broken = await httpDefectProxy(s.url, plan);
  broken.plant({
    name: 'everything but groups answers INTERNAL',
    breaks: 'spec:7.body',
    proves: [],
    over: ['http'],
    answer: (a, c) =>
      /^\/(ping|iam\/v2\/(groups|roles))\b/.test(c.path)
        ? a
        : { status: 500, body: { code: 13, message: 'x', details: [] } },
  });
  try {
    const run = await runSuite(broken.url);
    assert.is(run.status, 1);
    const failed = run.report.results.filter((r) => r.status === 'failed');
    assert.ok(failed.length > 100, `${failed.length} failures`);
    assert.is(run.report.failed, failed.length);
    const fromJson = [...failed, ...run.report.results.filter((r) => r.status === 'skipped')].map(
      ({ name, status, spec, decision, request, expected, actual, reason }: any) =>
        Object.fromEntries(
          Object.entries({ name, status, spec, decision, request, expected, actual, reason }).filter(
            ([, v]) => v !== undefined,
          ),
        ),
    );
    assert.equal(readText(run.stdout), fromJson, 'the same facts in text and JSON');
    for (const f of failed) {
      assert.ok(f.spec!.length > 0 || f.decision, `${f.name}: names the spec lines or the decision it checks`);
      assert.ok(f.request || f.reason, `${f.name}: the request, or what went wrong`);
    }
    const lines = run.stdout.trimEnd().split('\n');
    assert.match(lines.at(-1)!, new RegExp(`^\\d+ passed, ${failed.length} failed, \\d+ skipped$`));
  } finally {
    await broken.close();
  }
});

test.run();
