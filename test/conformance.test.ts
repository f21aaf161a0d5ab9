// The conformance suite, run as its CLI against our server over HTTP: it passes, its options narrow a run, and a
// failing target gets a report an implementer can act on, the same in text and JSON.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ConformancePlan } from '../conformance/plan.js';
import { startConformanceTarget, runSuite } from './support/conformance-target.js';
import { httpDefectProxy } from './support/defect-proxies.js';
import { runScript } from './support/process.js';
import type { TestServer } from './support/server.js';

let s: TestServer;

test.before(async () => {
  s = await startConformanceTarget();
});
test.after(async () => s.stop());

test('our server passes the whole suite, and the suite leaves no data behind', async () => {
  const before = (await s.call('GET', '/iam/v2/groups')).body.totalCount;
  const identities = (await s.call('GET', '/iam/v2/identities')).body.totalCount;
  const { body: nobody } = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' });
  const run = await runSuite(s, s.url, '--low-privilege-token', await s.mint(nobody.uid));
  assert.is(run.status, 0, run.stdout);
  for (const rule of [
    'api/no-token-unauthenticated',
    'api/bad-token-unauthenticated',
    'api/low-privilege-permission-denied',
    // Each declared feature: a range filter, a cascade, each operation's capability.
    'registry.tags/list/filter-updatedSince',
    'registry.repos/delete/cascades-to-tags',
    'iam.groups/delete/cascades-to-roleBindings',
    'registry.repos/access/each-operation-needs-its-capability',
  ]) {
    assert.is(run.report.results.find((r) => r.name === rule)?.status, 'passed', rule);
  }
  assert.is(run.report.failed, 0);
  assert.ok(run.report.passed > 250, `passed ${run.report.passed}`);
  assert.equal(
    run.report.results.filter((r) => r.note),
    [],
    'no rule fell back to a weaker check: the capability rules got their callers from the token exchange',
  );
  assert.match(run.stdout, /^\d+ passed, 0 failed, \d+ skipped$/m);
  const skipped = run.report.results.filter((r) => r.status === 'skipped').map((r) => r.name);
  assert.equal(
    skipped,
    [
      'api/v2beta1-names',
      'api/token-exchange-grpc',
      'api/v1-grpc-create-then-list',
      'api/v1-grpc-update-replaces',
      'api/v1-grpc-list-gone-empty',
      'api/v1-grpc-errors',
    ],
    'the sample data gives every read-only rule something to check; only the gRPC surfaces wait for --protocol grpc',
  );
  assert.is((await s.call('GET', '/iam/v2/groups')).body.totalCount, before);
  assert.is((await s.call('GET', '/registry/v2/repos')).body.totalCount, '0');
  await s.call('DELETE', `/iam/v2/identities/${nobody.uid}`);
  assert.is((await s.call('GET', '/iam/v2/identities')).body.totalCount, identities, 'its callers deleted too');
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
  const run = await runSuite(s, s.url, '--filter', 'registry.repos/*', '--parent', parent.uid, '--skip-file', skipFile);
  assert.is(run.status, 0, run.stdout);
  assert.ok(run.report.results.every((r) => r.name.startsWith('registry.repos/')));
  assert.equal(
    run.report.results.filter((r) => r.status === 'skipped').map((r) => r.name),
    ['registry.repos/list/skip'],
  );
  // The capability rule needs no --low-privilege-token: its callers come from the token exchange, each bound to a
  // role holding all but one capability.
  const access = run.report.results.find((r) => r.name === 'registry.repos/access/each-operation-needs-its-capability');
  assert.equal(access, { name: 'registry.repos/access/each-operation-needs-its-capability', status: 'passed' });
  assert.match(run.stdout, /^SKIP registry\.repos\/list\/skip: listed in the skip file$/m, 'the reason in the text');
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
    const fact = /^ {2}(spec|decision|declared|request|expected|actual|error): +(.*)$/.exec(line);
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
    const run = await runSuite(s, broken.url);
    assert.is(run.status, 1);
    const failed = run.report.results.filter((r) => r.status === 'failed');
    assert.ok(failed.length > 100, `${failed.length} failures`);
    assert.is(run.report.failed, failed.length);
    const fromJson = [...failed, ...run.report.results.filter((r) => r.status === 'skipped')].map(
      ({ name, status, spec, decision, declared, request, expected, actual, reason }: any) =>
        Object.fromEntries(
          Object.entries({ name, status, spec, decision, declared, request, expected, actual, reason }).filter(
            ([, v]) => v !== undefined,
          ),
        ),
    );
    assert.equal(readText(run.stdout), fromJson, 'the same facts in text and JSON');
    for (const f of failed) {
      assert.ok(
        (f.spec?.length ?? 0) > 0 || f.decision || f.declared,
        `${f.name}: names the spec lines, the decision or the declaration it checks`,
      );
      assert.ok(f.request || f.reason, `${f.name}: the request, or what went wrong`);
    }
    const lines = run.stdout.trimEnd().split('\n');
    assert.match(lines.at(-1)!, new RegExp(`^\\d+ passed, ${failed.length} failed, \\d+ skipped$`));
  } finally {
    await broken.close();
  }
});

test.run();
