// The conformance suite, run as its CLI: it passes our server, and it catches planted defects by name.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { grpcDefectProxy, type GrpcRewrite } from './support/grpc-defect-proxy.js';
import { runScript } from './support/process.js';
import { createOrg, startTestServer, type TestServer } from './support/server.js';

let s: TestServer;

test.before(async () => {
  s = await startTestServer();
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
    results: { name: string; status: string; expected?: string; request?: string }[];
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

test('over gRPC, planted defects are reported by the same rules', async () => {
  const repos = '/chainguard.platform.registry.v2.ReposService/';
  const defects: { name: string; rewrite: GrpcRewrite; caught: string[] }[] = [
    {
      name: 'total_count off by one',
      rewrite: (rpc) =>
        rpc === `${repos}ListRepos`
          ? { response: (m) => ({ ...m, total_count: String(Number(m.total_count ?? 0) + 1) }) }
          : {},
      caught: ['registry.repos/list/envelope'],
    },
    {
      name: 'NOT_FOUND answered as INTERNAL',
      rewrite: (rpc) => (rpc === `${repos}GetRepo` ? { error: (code) => (code === 5 ? 13 : code) } : {}),
      caught: ['registry.repos/get/not-found-has-resource-info'],
    },
    {
      name: 'the update_mask dropped',
      rewrite: (rpc) => (rpc === `${repos}UpdateRepo` ? { request: ({ update_mask: _, ...m }) => m } : {}),
      caught: ['registry.repos/update/mask-ignores-other-fields'],
    },
  ];
  for (const d of defects) {
    const proxy = await grpcDefectProxy(s.url, d.rewrite);
    try {
      const run = await runSuite(proxy.url, '--protocol', 'grpc', '--filter', 'registry.repos/*');
      assert.is(run.status, 1, `${d.name}: the suite exits non-zero`);
      const failed = run.report.results.filter((r) => r.status === 'failed').map((r) => r.name);
      for (const rule of d.caught)
        assert.ok(failed.includes(rule), `${d.name}: ${rule} is reported (failed: ${failed.join(', ')})`);
    } finally {
      await proxy.close();
    }
  }
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

type Rewrite = (req: { method: string; url: string; body: string }) => {
  url?: string;
  respond?: (status: number, body: any) => { status: number; body: any; headers?: Record<string, string> };
};

/** A proxy in front of our server that plants one defect by rewriting requests or responses. */
async function defectProxy(rewrite: Rewrite): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString();
    const plan = rewrite({ method: req.method!, url: req.url!, body });
    const upstream = await fetch(s.url + (plan.url ?? req.url), {
      method: req.method,
      headers: {
        'content-type': req.headers['content-type'] ?? 'application/json',
        authorization: req.headers.authorization ?? '',
      },
      body: body === '' ? undefined : body,
    });
    let status = upstream.status;
    let out: any = await upstream.text();
    try {
      out = JSON.parse(out);
    } catch {
      /* not JSON */
    }
    let headers: Record<string, string> = {};
    if (plan.respond) ({ status, body: out, headers = {} } = plan.respond(status, out));
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(typeof out === 'string' ? out : JSON.stringify(out));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

test('a target failing nearly every rule: every failure in stdout and --json, the summary line last', async () => {
  // Groups still work (the suite makes its own group to hold what it creates), nothing else does.
  const broken = await defectProxy(({ url }) =>
    /^\/(ping|iam\/v2\/groups)\b/.test(url)
      ? {}
      : { respond: () => ({ status: 500, body: { code: 13, message: 'x', details: [] } }) },
  );
  try {
    const run = await runSuite(broken.url);
    assert.is(run.status, 1);
    const failed = run.report.results.filter((r) => r.status === 'failed');
    assert.ok(failed.length > 100, `${failed.length} failures`);
    assert.is(run.report.failed, failed.length);
    const reported = new Set([...run.stdout.matchAll(/^FAIL (\S+)/gm)].map((m) => m[1]));
    assert.equal([...reported].sort(), failed.map((r) => r.name).sort(), 'a FAIL line for each');
    const lines = run.stdout.trimEnd().split('\n');
    assert.match(lines.at(-1)!, new RegExp(`^\\d+ passed, ${failed.length} failed, \\d+ skipped$`));
  } finally {
    await broken.close();
  }
});

interface Defect {
  name: string;
  rewrite: Rewrite;
  caught: string[];
  /** the rules run against it (default registry.repos/*) */
  filter?: string;
}

const isList = (url: string) => /^\/registry\/v2\/repos\?/.test(url);

/** Departures of paging: limits that show only with enough data, freshness, the end of a walk. */
function pagingDefects(): Defect[] {
  const totals = new Map<string, string>();
  let firstToken = '';
  return [
    {
      name: 'a default page size of 20',
      rewrite: ({ url }) => (isList(url) && !/page_?[sS]ize=/.test(url) ? { url: `${url}&page_size=20` } : {}),
      caught: ['registry.repos/list/page-size-default'],
    },
    {
      name: 'a totalCount that does not follow writes',
      rewrite: ({ url }) => ({
        respond: (status, b) => {
          if (!isList(url) || !b?.totalCount) return { status, body: b };
          if (!totals.has(url)) totals.set(url, b.totalCount);
          return { status, body: { ...b, totalCount: totals.get(url) } };
        },
      }),
      caught: ['registry.repos/list/fresh-after-writes'],
    },
    {
      name: 'an exactly full last page with a token back to the start',
      rewrite: ({ url }) => ({
        respond: (status, b) => {
          if (!isList(url) || !/page_size=4/.test(url)) return { status, body: b };
          if (!/page_token=/.test(url)) firstToken = b.nextPageToken ?? firstToken;
          else if (!b.nextPageToken && b.repos?.length === 4)
            return { status, body: { ...b, nextPageToken: firstToken } };
          return { status, body: b };
        },
      }),
      caught: ['registry.repos/list/exact-last-page'],
    },
    {
      name: 'a validation message without the field',
      rewrite: () => ({
        respond: (status, b) => ({
          status,
          body: status === 400 ? { ...b, message: 'Invalid argument: bad request' } : b,
        }),
      }),
      caught: ['registry.repos/create/requires-name'],
    },
  ];
}

/** Departures of the API as a whole: error shapes, headers, versions, special resources. */
function apiDefects(): Defect[] {
  return [
    {
      name: 'an ErrorInfo domain not of the iam.<service>.dev shape',
      rewrite: () => ({
        respond: (status, b) => ({
          status,
          body:
            status >= 400 && Array.isArray(b?.details)
              ? { ...b, details: b.details.map((d: any) => (d.domain ? { ...d, domain: 'errors.example' } : d)) }
              : b,
        }),
      }),
      caught: ['api/error-body-shape'],
      filter: 'api/*',
    },
    {
      name: 'deprecated tags filtered out by the server',
      rewrite: ({ url }) => ({
        respond: (status, b) => ({
          status,
          body:
            url.startsWith('/registry/v2/tags?') && b?.tags
              ? { ...b, tags: b.tags.filter((t: any) => !t.deprecated) }
              : b,
        }),
      }),
      caught: ['api/tags-deprecated-listed'],
      filter: 'api/*',
    },
    {
      name: 'a Sunset header on a generally available version',
      rewrite: () => ({
        respond: (status, b) => ({ status, body: b, headers: { sunset: 'Wed, 01 Jan 2031 00:00:00 GMT' } }),
      }),
      caught: ['api/json-answers', 'api/v1-beside-v2'],
      filter: 'api/*',
    },
    {
      name: 'answers as text/plain',
      rewrite: () => ({ respond: (status, b) => ({ status, body: b, headers: { 'content-type': 'text/plain' } }) }),
      caught: ['api/json-answers'],
      filter: 'api/*',
    },
    {
      name: 'v1 gone',
      rewrite: ({ url }) => (url.startsWith('/iam/v1/') ? { url: '/iam/v1/no-such-call' } : {}),
      caught: ['api/v1-beside-v2'],
      filter: 'api/*',
    },
    {
      name: 'a role binding answered with bare uids',
      rewrite: ({ method, url }) => ({
        respond: (status, b) => {
          if (method !== 'POST' || !url.startsWith('/iam/v2/roleBindings/')) return { status, body: b };
          const { identity, group, role, ...bare } = b;
          return { status, body: { ...bare, identityUid: identity?.uid, roleUid: role?.uid, group: undefined } };
        },
      }),
      caught: ['api/role-binding-hydrated'],
      filter: 'api/*',
    },
    {
      name: 'no built-in viewer role',
      rewrite: ({ url }) => ({
        respond: (status, b) => ({ status, body: url.startsWith('/iam/v2/roles?') ? { ...b, roles: [] } : b }),
      }),
      caught: ['api/built-in-viewer-role'],
      filter: 'api/*',
    },
    {
      name: 'an identity created without lastSeenTime',
      rewrite: ({ method, url }) => ({
        respond: (status, b) => ({
          status,
          body: method === 'POST' && url.startsWith('/iam/v2/identities') ? { ...b, lastSeenTime: undefined } : b,
        }),
      }),
      caught: ['api/identity-create-shows-last-seen'],
      filter: 'api/*',
    },
  ];
}

/** The departures a proxy plants, each with the rules that must report it; decoy: a group to misdirect creates to. */
function plantedDefects(decoy: { uid: string }): Defect[] {
  return [
    ...pagingDefects(),
    ...apiDefects(),
    {
      name: 'totalCount as a number',
      rewrite: () => ({
        respond: (status, b) => ({ status, body: b?.totalCount ? { ...b, totalCount: Number(b.totalCount) } : b }),
      }),
      caught: ['registry.repos/list/envelope'],
    },
    {
      name: 'off by one at a page boundary',
      rewrite: ({ url }) => ({
        respond: (status, b) => ({
          status,
          body: isList(url) && b?.nextPageToken ? { ...b, repos: b.repos.slice(0, -1) } : b,
        }),
      }),
      caught: ['registry.repos/list/page-walk-size-7', 'registry.repos/list/page-walk-size-1'],
    },
    {
      name: 'PATCH ignores the mask',
      rewrite: ({ method, url }) => (method === 'PATCH' ? { url: url.replace(/[?&]update_?[mM]ask=[^&]*/, '') } : {}),
      caught: ['registry.repos/update/mask-ignores-other-fields'],
    },
    {
      name: '500 instead of NOT_FOUND',
      rewrite: () => ({
        respond: (status, b) =>
          status === 404 ? { status: 500, body: { code: 13, message: 'internal', details: [] } } : { status, body: b },
      }),
      caught: ['registry.repos/get/not-found-has-resource-info', 'registry.repos/delete/then-not-found'],
    },
    {
      name: 'the parent ignored on create',
      rewrite: ({ method, url }) =>
        method === 'POST' && url.startsWith('/registry/v2/repos/') ? { url: `/registry/v2/repos/${decoy.uid}` } : {},
      caught: ['registry.repos/create/returns-resource'],
    },
  ];
}

test('planted defects are each reported by the rule they break', async () => {
  const { body: decoy } = await s.call('POST', '/iam/v2/groups', { name: 'decoy' });
  for (const d of plantedDefects(decoy)) {
    const proxy = await defectProxy(d.rewrite);
    try {
      const run = await runSuite(proxy.url, '--filter', d.filter ?? 'registry.repos/*');
      assert.is(run.status, 1, `${d.name}: the suite exits non-zero`);
      const failed = run.report.results.filter((r) => r.status === 'failed').map((r) => r.name);
      for (const rule of d.caught)
        assert.ok(failed.includes(rule), `${d.name}: ${rule} is reported (failed: ${failed.join(', ')})`);
      const first = run.report.results.find((r) => r.name === d.caught[0])!;
      assert.ok(first.expected && first.request, `${d.name}: the failure says what was expected and which request`);
      assert.match(run.stdout, new RegExp(`FAIL ${d.caught[0].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
    } finally {
      await proxy.close();
    }
  }
  await s.call('DELETE', `/iam/v2/groups/${decoy.uid}`);
});

test.run();
