// The defect catalogue (conformance/defects.ts) planted one row at a time over one protocol: one server, one proxy
// switched between runs, and the suite run in this process on just the rules each row must fail.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Client, type ApiClient } from '../../conformance/client.js';
import { defectCatalogue, type Protocol } from '../../conformance/defects.js';
import { GrpcClient } from '../../conformance/grpc-client.js';
import type { ConformancePlan } from '../../conformance/plan.js';
import { runConformance, type RuleResult } from '../../conformance/run.js';
import { grpcDefectProxy, httpDefectProxy, type DefectProxy } from './defect-proxies.js';
import { runScript } from './process.js';
import { createOrg, startTestServer, type TestServer } from './server.js';

export function defectTests(protocol: Protocol): void {
  const plan = JSON.parse(readFileSync('generated/conformance/plan.json', 'utf8')) as ConformancePlan;
  const catalogue = defectCatalogue().filter((d) => d.over.includes(protocol));
  let s: TestServer;
  let proxy: DefectProxy;
  let client: ApiClient & { close?(): void };

  test.before(async () => {
    s = await startTestServer();
    // Advisories for the rule of a read-only resource's get.
    const org = await createOrg(s, 'data');
    const r = await runScript('scripts/import.ts', ['advisories', 'samples/advisories.json', '--parent', org], s.env);
    if (r.status !== 0) throw new Error(r.stderr);
    const { body: nobody } = await s.call('POST', `/iam/v2/identities/${s.bootstrap.organization}`, { name: 'nobody' });
    const low = await s.mint(nobody.uid);
    const token = async () => s.token;
    if (protocol === 'http') {
      proxy = await httpDefectProxy(s.url, plan);
      client = new Client(proxy.url, token, low);
    } else {
      proxy = await grpcDefectProxy(s.url, plan);
      client = new GrpcClient(proxy.url, 'generated/proto', plan, token, low);
    }
  });
  test.after(async () => {
    client?.close?.();
    await proxy?.close();
    await s?.stop();
  });

  const run = (only: string[]): Promise<RuleResult[]> =>
    runConformance({ client, plan, only, known: [], progress: () => undefined });

  test(`over ${protocol}, with no defect planted, every rule the catalogue names passes through the proxy`, async () => {
    proxy.plant(undefined);
    const results = await run([...new Set(catalogue.flatMap((d) => d.proves))]);
    assert.equal(
      results.filter((r) => r.status !== 'passed'),
      [],
    );
  });

  test(`over ${protocol}, each planted defect is reported by the rules it breaks, with what an implementer needs`, async () => {
    assert.ok(catalogue.length > 20, `${catalogue.length} defects`);
    for (const d of catalogue) {
      proxy.plant(d);
      const results = await run(d.proves).finally(() => proxy.plant(undefined));
      for (const rule of d.proves) {
        const r = results.find((x) => x.name === rule);
        assert.is(r?.status, 'failed', `${d.name}: ${rule} fails (${JSON.stringify(r)})`);
        // The report names what the defect broke, and the request, the expectation and the answer behind it.
        if (d.breaks === 'decision') assert.ok(r!.decision, `${d.name}: the failure names the decision`);
        else if (d.breaks === 'declared') assert.ok(r!.declared, `${d.name}: the failure names the declaration`);
        else
          assert.ok(
            r!.spec?.some((x) => x.id === d.breaks),
            `${d.name}: the failure names ${d.breaks}`,
          );
        assert.ok(r!.request && r!.expected && r!.actual !== undefined, `${d.name}: ${JSON.stringify(r)}`);
        if (d.reports) assert.match(r!.actual!, d.reports, d.name);
      }
    }
  });
}
