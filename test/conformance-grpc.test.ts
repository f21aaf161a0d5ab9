// The conformance suite over gRPC against our server: the same rules by the same names, skipping only what gRPC
// cannot express.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runSuite, startConformanceTarget } from './support/conformance-target.js';
import type { TestServer } from './support/server.js';

let s: TestServer;

test.before(async () => {
  s = await startConformanceTarget();
});
test.after(async () => s.stop());

test('--protocol grpc runs the same rules over the gRPC surface, skipping only what gRPC cannot express', async () => {
  const { body: nobody } = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' });
  const run = await runSuite(s, s.url, '--protocol', 'grpc', '--low-privilege-token', await s.mint(nobody.uid));
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
    'api/v2beta1-names',
    'api/token-exchange-grpc',
    'registry.repos/list/page-size-max',
    'registry.tags/create/one-violation-per-field',
    'iam.identities/create/pattern-excludes-name',
    'registry.tags/list/filter-updatedSince',
    'registry.repos/delete/cascades-to-tags',
    'registry.tags/access/each-operation-needs-its-capability',
    'api/v1-grpc-create-then-list',
    'api/v1-grpc-update-replaces',
    'api/v1-grpc-list-gone-empty',
    'api/v1-grpc-errors',
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
    'iam.groups/create/one-violation-per-field',
    'iam.groups/create/rejects-invalid-kind',
    'iam.identities/create/one-violation-per-field',
    'iam.identities/create/rejects-invalid-servicePrincipal',
    'registry.repos/create/one-violation-per-field',
    'registry.repos/create/rejects-invalid-catalogTier',
    'registry.tags/create/ignores-output-only',
    'registry.tags/list/order-by-created_at',
    'registry.tags/list/order-by-created_at-desc',
  ]);
  assert.match(run.stdout, /^\d+ passed, 0 failed, 18 skipped$/m);
  assert.is((await s.call('GET', '/registry/v2/repos')).body.totalCount, '0', 'cleaned up over gRPC');
  await s.call('DELETE', `/iam/v2/identities/${nobody.uid}`);
});

test('--grpc-names v2beta1 runs the same rules against the v2 services under their v2beta1 names', async () => {
  const { body: nobody } = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' });
  const low = await s.mint(nobody.uid);
  const only = ['registry.*', 'iam.groups/*', 'events.subscriptions/*', 'api/low-privilege-permission-denied'];
  const filters = only.flatMap((f) => ['--filter', f]);
  const run = await runSuite(
    s,
    s.url,
    '--protocol',
    'grpc',
    '--grpc-names',
    'v2beta1',
    '--low-privilege-token',
    low,
    ...filters,
  );
  assert.is(run.status, 0, run.stdout);
  assert.ok(run.report.passed > 100, `passed ${run.report.passed}`);
  assert.is((run.report as any).protocol, 'grpc (v2beta1 names)');
  // The names are the ones called: under a version nobody serves, every rpc is UNIMPLEMENTED.
  // (Under a group given: the suite cannot make its own there either.)
  const none = await runSuite(
    s,
    s.url,
    ...['--protocol', 'grpc', '--grpc-names', 'v3', '--parent', s.bootstrap.organization],
    ...['--filter', 'registry.repos/get/*'],
  );
  assert.is(none.status, 1);
  assert.ok(
    none.report.results.every((r) => r.status === 'failed' && /HTTP 501/.test(`${r.actual}${r.reason}`)),
    none.stdout,
  );
  await s.call('DELETE', `/iam/v2/identities/${nobody.uid}`);
});

test.run();
