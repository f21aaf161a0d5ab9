// A target for the conformance suite's end-to-end tests: our server with the sample data of every read-only
// resource and a delivery, and the suite run against it as its CLI with --json.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RuleResult } from '../../conformance/run.js';
import { runScript } from './process.js';
import { createOrg, startTestServer, type TestServer } from './server.js';

export async function startConformanceTarget(): Promise<TestServer> {
  // Enough subscriptions in one organization for the page size rules' 201.
  const s = await startTestServer(undefined, { EVENTS_MAX_SUBSCRIPTIONS: '1000' });
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
  return s;
}

export interface SuiteRun {
  status: number | null;
  stdout: string;
  report: { passed: number; failed: number; skipped: number; results: RuleResult[] };
}

export async function runSuite(s: TestServer, baseUrl: string, ...args: string[]): Promise<SuiteRun> {
  const json = join(s.dataDir, `report-${Date.now()}.json`);
  const r = await runScript(
    'scripts/conformance.ts',
    ['--base-url', baseUrl, '--token', s.token, '--json', json, ...args],
    {},
  );
  return { status: r.status, stdout: r.stdout + r.stderr, report: JSON.parse(readFileSync(json, 'utf8')) };
}
