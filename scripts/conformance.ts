// npm run conformance -- --base-url URL [--token T | --token-command CMD] [--low-privilege-token T] [--parent GROUP_UID]
//   [--filter GLOB]... [--skip-file FILE] [--json FILE] [--plan FILE] [--wait SECONDS] [--protocol http|grpc]
//   [--proto-dir DIR] [--grpc-names VERSION] [--profile spec|all] | --coverage
// Checks any implementation of the API against the rules generated from spec/.
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client, type ApiClient } from '../conformance/client.js';
import { GrpcClient } from '../conformance/grpc-client.js';
import type { ConformancePlan } from '../conformance/plan.js';
import { formatReport, makeReport } from '../conformance/report.js';
import { runConformance, type Profile } from '../conformance/run.js';
import { coverageProblems, formatCoverage } from '../conformance/spec-coverage.js';
import { parseCommandLine } from './cli-args.js';

class UsageError extends Error {}

async function waitForTarget(baseUrl: string, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  let last = '';
  while (Date.now() < deadline) {
    try {
      await fetch(`${baseUrl}/ping/v2/ping`, { signal: AbortSignal.timeout(2000) });
      return;
    } catch (e) {
      last = (e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new UsageError(`${baseUrl} did not answer within ${seconds} s (${last}); is the server running?`);
}

const { values } = parseCommandLine({
  name: 'conformance',
  usage: `
usage: npm run conformance -- --base-url URL [options]
Runs the rules generated from spec/ (generated/conformance/plan.json) against any implementation of the API.
  --base-url URL               the server to check (required)
  --token T                    the bearer token to call it with
  --token-command CMD          a command that prints one, e.g. 'npm run -s token'
  --low-privilege-token T      a token of an identity bound to no role, for api/low-privilege-permission-denied
                               (and the capability rules, where the target has no token exchange to get their
                               callers from)
  --parent GROUP_UID           work under this group (default: a root group it creates and deletes)
  --filter GLOB                only rules whose name matches (repeatable), e.g. 'registry.*'
  --skip-file FILE             known failures: rule names or globs, one a line, # comments
  --json FILE                  also write the results as JSON
  --plan FILE                  the plan (default generated/conformance/plan.json)
  --wait SECONDS               how long to wait for the target to answer (default 30)
  --protocol http|grpc         call the target over HTTP/JSON (default) or its gRPC surface, by the same rules
  --proto-dir DIR              the .proto files of the gRPC surface (default generated/proto)
  --grpc-names VERSION         with grpc: call each rpc under this version's package name instead of the plan's,
                               e.g. v2beta1 (the same messages served under their pre-release names)
  --profile spec|all           spec: only what the spec requires, leaving out the rules that check decisions of
                               ours where the spec says "not shown" (default all)
  --coverage                   print the spec coverage matrix (each statement of the spec and the rules that
                               check it, or why none does; per rule and protocol, the planted defect that proves
                               it can fail) and exit: 1 if a statement has neither or a rule has no defect
Prints each failure (the spec lines its rule checks, the request, what was expected and what came back), then
each skip with its reason, then "N passed, N failed, N skipped" last; --json FILE holds the same facts.
Exits 0 when every rule run passed, 1 on any failure, 2 on a usage error or an unreachable target.`,
  options: {
    'base-url': { type: 'string' },
    token: { type: 'string' },
    'token-command': { type: 'string' },
    'low-privilege-token': { type: 'string' },
    parent: { type: 'string' },
    filter: { type: 'string', multiple: true },
    'skip-file': { type: 'string' },
    json: { type: 'string' },
    plan: { type: 'string', default: 'generated/conformance/plan.json' },
    wait: { type: 'string', default: '30' },
    protocol: { type: 'string', default: 'http' },
    'proto-dir': { type: 'string', default: 'generated/proto' },
    'grpc-names': { type: 'string' },
    profile: { type: 'string', default: 'all' },
    coverage: { type: 'boolean', default: false },
  },
});

/** The client of the chosen protocol, once the target answers. */
async function connect(
  baseUrl: string,
  plan: ConformancePlan,
  token: () => Promise<string | undefined>,
): Promise<ApiClient & { close?(): void }> {
  const seconds = Number(values.wait);
  console.log(`waiting for ${baseUrl}`);
  if (values.protocol === 'http') {
    await waitForTarget(baseUrl, seconds);
    return new Client(baseUrl, token, values['low-privilege-token']);
  }
  if (!plan.rpcs) throw new UsageError(`the plan ${values.plan} has no rpcs; run npm run generate`);
  let client: GrpcClient;
  try {
    client = new GrpcClient(baseUrl, values['proto-dir']!, plan, token, values['low-privilege-token'], {
      names: values['grpc-names'],
    });
  } catch (e) {
    throw new UsageError(`cannot read the protos in ${values['proto-dir']}: ${(e as Error).message}`);
  }
  await client.ready(seconds).catch((e: Error) => {
    client.close();
    throw new UsageError(`${baseUrl} did not answer gRPC within ${seconds} s (${e.message}); is the server running?`);
  });
  return client;
}

/** --coverage: the matrix on stdout, its problems on stderr; 1 when it has any. */
function printCoverage(): number {
  console.log(formatCoverage());
  const problems = coverageProblems();
  for (const p of problems) console.error(`coverage: ${p}`);
  return problems.length > 0 ? 1 : 0;
}

/** --protocol and --grpc-names, which names packages of the gRPC surface. */
function checkProtocol(): void {
  if (values.protocol !== 'http' && values.protocol !== 'grpc')
    throw new UsageError(`--protocol is http or grpc, not ${JSON.stringify(values.protocol)}`);
  const names = values['grpc-names'];
  if (names !== undefined && !/^v\d+\w*$/.test(names))
    throw new UsageError(`--grpc-names is a version such as v2beta1, not ${JSON.stringify(names)}`);
  if (names !== undefined && values.protocol !== 'grpc')
    throw new UsageError('--grpc-names names gRPC packages: give it with --protocol grpc');
}

async function main(): Promise<number> {
  if (values.coverage) return printCoverage();
  if (values.profile !== 'spec' && values.profile !== 'all')
    throw new UsageError(`--profile is spec or all, not ${JSON.stringify(values.profile)}`);
  const baseUrl = values['base-url']?.replace(/\/+$/, '');
  if (!baseUrl)
    throw new UsageError('--base-url URL is required, e.g. npm run conformance -- --base-url http://127.0.0.1:8080');
  if (values.token && values['token-command']) throw new UsageError('give --token or --token-command, not both');
  checkProtocol();
  let plan: ConformancePlan;
  try {
    plan = JSON.parse(readFileSync(values.plan!, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read the plan ${values.plan}: ${(e as Error).message}; run npm run generate`);
  }
  const known = values['skip-file']
    ? readFileSync(values['skip-file'], 'utf8')
        .split('\n')
        .map((l) => l.replace(/#.*/, '').trim())
        .filter(Boolean)
    : [];
  let token: string | undefined = values.token;
  const tokenSource = values['token-command']
    ? async () => (token ??= execSync(values['token-command']!, { encoding: 'utf8' }).trim())
    : async () => token;

  const client = await connect(baseUrl, plan, tokenSource);
  const started = Date.now();
  const results = await runConformance({
    client,
    plan,
    parent: values.parent,
    only: values.filter ?? [],
    known,
    profile: values.profile as Profile,
    progress: (line) => console.log(line),
  }).finally(() => client.close?.());
  const protocol = values['grpc-names'] ? `grpc (${values['grpc-names']} names)` : values.protocol!;
  const report = makeReport(baseUrl, protocol, Date.now() - started, results);
  if (values.json) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${formatReport(report)}`);
  return report.failed > 0 ? 1 : 0;
}

/**
 * Exits once stdout and stderr have taken everything written: into a pipe (`| tee`) writes can still be queued
 * when process.exit runs, and the report's end (the summary line) would be lost.
 */
function exitFlushed(code: number): void {
  let pending = 2;
  const done = () => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

main().then(exitFlushed, (e) => {
  console.error(`conformance: ${e instanceof UsageError ? e.message : e instanceof Error ? e.message : String(e)}`);
  exitFlushed(2);
});
