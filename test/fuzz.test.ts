// A seeded fuzz of every operation the server has (each path and method of the generated OpenAPI document, each
// v1 route, the documents, the token exchange, and the reference contracts' operations it does not serve), over
// real HTTP against a server process, plus raw-socket requests that Node's HTTP parser refuses. It asserts:
//   - no answer has a status >= 500, and every request gets an answer;
//   - every answer >= 400 is JSON {code: number, message: string, details: array}, its status the code's
//     (3->400, 5->404, 6->409, 7->403, 8->429, 9->400, 10->409, 12->501, 13->500, 14->503, 16->401; also 405, 408, 413, 415
//     417 and 431 for codes 3 and 12), and outside v1 its details hold exactly one google.rpc.ErrorInfo;
//   - no answer shows a stack trace, SQL or a file path.
// FUZZ_SEED picks the inputs (the default is fixed), FUZZ_REQUESTS how many (default 5200, at least 20 per
// operation), FUZZ_CASES=1,2,3 runs only those cases of the seed, FUZZ_REPORT=file writes every failure as JSON,
// FUZZ_SERVER_LOG=file the server's log. On failure the test prints the failing requests, grouped by class, with
// the server's log lines for them (the server runs with LOG=on; each request carries x-request-id fuzz-<seed>-<case>).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { apiModel } from '../generated/model.js';
import {
  garbageAuthorization,
  joinQuery,
  mutateBody,
  mutateDigest,
  mutatePathUid,
  queryString,
  rawCases,
  Rng,
  type WireBody,
} from './support/fuzz-inputs.js';
import {
  otherOperations,
  otherUid,
  referenceFields,
  unservedOperations,
  v1Operations,
  v2Operations,
  type Fixtures,
  type Operation,
} from './support/fuzz-operations.js';
import { runScript, spawnServer, type ServerProcess } from './support/process.js';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) >>> 0 : 20260522;
const requestCount = Number(process.env.FUZZ_REQUESTS ?? 5200);
const only = process.env.FUZZ_CASES ? new Set(process.env.FUZZ_CASES.split(',').map(Number)) : undefined;
const concurrency = 8;
const answerTimeoutMs = 10_000;

const readJson = (path: string) => JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8'));
const openapi = readJson('../generated/openapi.json');
const operations: Operation[] = (() => {
  const served = [...v2Operations(openapi, apiModel), ...v1Operations(openapi, apiModel), ...otherOperations()];
  // The reference contracts' facts (test/facts/, scripts/tooling/reference-facts.mjs).
  const reference = ['api-v1.json', 'api-v2.json'].map((f) => readJson(`./facts/${f}`));
  return [...served, ...unservedOperations(reference, served)];
})();

// ---------------------------------------------------------------------------------------------------------------
// The server and the records every valid request names

let server: ServerProcess;
let dataDir: string;
let port: number;
let fx: Fixtures;
const tokens = { owner: '', lowPrivilege: '' };
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

async function call(method: string, path: string, body?: unknown, token = tokens.owner): Promise<any> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`fuzz setup: ${method} ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

async function script(name: string, args: string[]): Promise<string> {
  const r = await runScript(`scripts/${name}.ts`, args, {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG: 'off',
  });
  if (r.status !== 0) throw new Error(`fuzz setup: ${name} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** Imports the samples of the read-only resources: those under a repo once the repos named in them exist. */
function importSamples(org: string, repos: Promise<unknown>): Promise<unknown> {
  const load = (collection: string, file: string) => script('import', [collection, `samples/${file}`, '--parent', org]);
  return Promise.all([
    load('artifacts', 'artifacts.ndjson').then(() => load('artifactVersions', 'artifactVersions.json')),
    load('advisories', 'advisories.json'),
    repos.then(() => Promise.all([load('images', 'images.json'), load('vulnReports', 'vulnReports.json')])),
  ]);
}

let setupSeconds = '';

test.before(async () => {
  const started = performance.now();
  const mark = (what: string) =>
    process.env.FUZZ_DEBUG && console.log(`setup: ${what} at ${((performance.now() - started) / 1000).toFixed(1)} s`);
  dataDir = mkdtempSync(join(tmpdir(), 'platform-api-fuzz-'));
  server = await spawnServer({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG: 'on' });
  port = Number(new URL(server.url).port);
  mark('server up');
  const bootstrap = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
  const org: string = bootstrap.organization;
  let reposMade: () => void = () => {};
  const imports = importSamples(
    org,
    new Promise<void>((r) => {
      reposMade = r;
    }),
  ).then(() => mark('imports'));
  tokens.owner = await script('token', []);
  mark('owner token');
  const group = (await call('POST', `/iam/v2/groups/${org}`, { name: 'fuzz team' })).uid;
  const [subgroup, repo, imageRepo] = await Promise.all([
    call('POST', `/iam/v2/groups/${group}`, { name: 'fuzz sub' }).then((r) => r.uid),
    call('POST', `/registry/v2/repos/${group}`, { name: 'fuzz-repo' }).then((r) => r.uid),
    call('POST', `/registry/v2/repos/${org}`, { name: 'nginx' }).then((r) => r.uid),
    call('POST', `/registry/v2/repos/${org}`, { name: 'python' }),
  ]);
  reposMade();
  const digest: string = readJson('../samples/images.json')[0].digest;
  const [tag, identity, lowPrivilege, role, viewer] = await Promise.all([
    call('POST', `/registry/v2/tags/${repo}`, { name: '1.0', digest }).then((r) => r.uid),
    call('POST', `/iam/v2/identities/${group}`, { name: 'fuzz identity' }).then((r) => r.uid),
    call('POST', `/iam/v2/identities/${org}`, { name: 'fuzz viewer' }).then((r) => r.uid),
    call('POST', `/iam/v2/roles/${group}`, { name: 'fuzz role', capabilities: ['CAP_REPO_LIST'] }).then((r) => r.uid),
    call('GET', '/iam/v2/roles?name=viewer').then((r) => r.roles[0].uid),
  ]);
  const [, roleBinding, identityProvider, accountAssociation, invite, subscription] = await Promise.all([
    call('POST', `/iam/v2/roleBindings/${group}`, { identityUid: lowPrivilege, roleUid: viewer }),
    call('POST', `/iam/v2/roleBindings/${group}`, { identityUid: identity, roleUid: role }).then((r) => r.uid),
    call('POST', `/iam/v2/identityProviders/${group}`, { name: 'fuzz idp', defaultRole: role }).then((r) => r.uid),
    call('POST', `/iam/v2/accountAssociations/${group}`, { name: 'fuzz aa' }).then((r) => r.uid),
    call('POST', `/iam/v2/groupInvites/${group}`, { roleUid: role, ttl: '3600s' }),
    call('POST', `/events/v2/subscriptions/${group}`, { sink: 'http://127.0.0.1:9/fuzz' }).then((r) => r.uid),
    call('POST', `/iam/v2/terms/${group}`, { documentIds: ['platform-terms-of-service-2025-01'] }),
    call('PATCH', `/registry/v2/repos/${repo}/readme`, { content: '# fuzz' }),
  ]);
  const externalGroupRoleMapping = (
    await call('POST', `/iam/v2/externalGroupRoleMappings/${identityProvider}`, {
      externalGroupId: 'fuzz',
      roleUid: role,
    })
  ).uid;
  mark('records');
  [tokens.lowPrivilege] = await Promise.all([
    script('token', ['--identity', lowPrivilege]).then((t) => (mark('low-privilege token'), t)),
    imports,
  ]);
  const artifact = (await call('GET', '/libraries/v2/artifacts?page_size=1')).artifacts[0].uid;
  const advisory = (await call('GET', '/vulnerabilities/v2/advisories?page_size=1')).advisories[0].uid;
  fx = {
    org,
    group,
    subgroup,
    repo,
    tag,
    identity,
    role,
    roleBinding,
    identityProvider,
    accountAssociation,
    groupInvite: invite.uid,
    externalGroupRoleMapping,
    subscription,
    artifact,
    advisory,
    advisoryEvent: `${advisory}/${'0'.repeat(16)}`,
    imageRepo,
    digest,
    inviteCode: invite.code,
    owner: bootstrap.owner,
  };
  setupSeconds = ((performance.now() - started) / 1000).toFixed(1);
});

test.after(async () => {
  agent.destroy();
  if (server?.child.exitCode === null) {
    const exited = new Promise((r) => server.child.once('exit', r));
    server.child.kill('SIGTERM');
    await exited;
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------------
// Cases: one request each, generated from the seed before anything is sent

interface Case {
  index: number;
  op: Operation;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** who the token belongs to: owner, low-privilege, none, garbage */
  token: string;
  /** the mutations applied ("valid" for none) */
  labels: string[];
}

type Dimension = 'path' | 'query' | 'body' | 'token' | 'method';
const otherMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** Which parts of the request to mutate: none for about 15% of cases, else one (sometimes two), by weight. */
function mutatedDimensions(rng: Rng, op: Operation): Set<Dimension> {
  const mutated = new Set<Dimension>();
  if (rng.chance(0.15)) return mutated;
  const bodyWeight = op.body ? 4 : ['POST', 'PUT', 'PATCH'].includes(op.method) ? 1 : 0.3;
  const dims: [number, Dimension][] = [
    [op.params.length > 0 ? 3 : 0, 'path'],
    [op.query.length > 0 ? 3 : 1, 'query'],
    [bodyWeight, 'body'],
    [1, 'token'],
    [0.5, 'method'],
  ];
  mutated.add(rng.weighted(dims));
  if (rng.chance(0.15)) mutated.add(rng.weighted(dims));
  return mutated;
}

/** The path with real records in it, one of them hostile if the path is mutated. */
function casePath(rng: Rng, op: Operation, mutate: boolean, labels: string[]): string {
  let path = op.template;
  const hostile = mutate ? rng.int(op.params.length) : -1;
  op.params.forEach((p, i) => {
    let value = p.fixture === 'digest' ? fx.digest : fx[p.fixture];
    if (i === hostile) {
      const m =
        p.fixture === 'digest' ? mutateDigest(rng, value) : mutatePathUid(rng, value, otherUid(rng, fx, p.fixture));
      value = m.value;
      labels.push(m.label);
    }
    path = path.replace(`{${p.name}}`, value);
  });
  return path;
}

/** The body: hostile if mutated, else the valid one (an optional body is sent 70% of the time). */
function caseBody(rng: Rng, op: Operation, mutate: boolean, labels: string[]): WireBody {
  if (!op.body && !mutate) return {};
  const valid = op.body ? op.body.valid(rng, fx) : {};
  if (mutate) {
    const m = mutateBody(rng, { valid, schema: op.body?.schema, refs: referenceFields(fx) });
    labels.push(m.label);
    return m.value;
  }
  return op.body && (op.body.required || rng.chance(0.7)) ? { bytes: Buffer.from(JSON.stringify(valid)) } : {};
}

/** Whose token the request carries, and its Authorization header (undefined: none). */
function caseToken(rng: Rng, mutate: boolean, labels: string[]): { token: string; authorization?: string } {
  if (!mutate) return { token: 'owner', authorization: `Bearer ${tokens.owner}` };
  const token = rng.weighted([
    [0.35, 'none'],
    [0.35, 'garbage'],
    [0.3, 'low-privilege'],
  ] as const);
  labels.push(`token:${token}`);
  if (token === 'none') return { token };
  return {
    token,
    authorization:
      token === 'garbage' ? garbageAuthorization(rng, tokens.owner, fx.owner) : `Bearer ${tokens.lowPrivilege}`,
  };
}

function generateCase(rng: Rng, op: Operation, index: number): Case {
  const mutated = mutatedDimensions(rng, op);
  const labels: string[] = [];
  let path = casePath(rng, op, mutated.has('path'), labels);
  const query = queryString(
    rng,
    op.query.map((q) => ({ ...q, valid: () => q.valid(rng, fx) })),
    mutated.has('query'),
  );
  if (mutated.has('query')) labels.push(...query.label.split(','));
  if (query.value.length > 0) path += `?${joinQuery(query.value)}`;
  const body = caseBody(rng, op, mutated.has('body'), labels);
  const { token, authorization } = caseToken(rng, mutated.has('token'), labels);
  let method = op.method;
  if (mutated.has('method')) {
    method = rng.pick(otherMethods.filter((m) => m !== op.method));
    labels.push('method:other');
  }
  const headers: Record<string, string> = { 'x-request-id': `fuzz-${seed}-${index}` };
  if (authorization !== undefined) headers.authorization = authorization;
  if (body.bytes) headers['content-type'] = body.contentType ?? 'application/json';
  return { index, op, method, path, headers, body: body.bytes, token, labels: labels.length > 0 ? labels : ['valid'] };
}

/** How many requests each operation gets: a few for unserved ones, the rest shared by weight among served ones. */
function allocation(): Map<Operation, number> {
  const unserved = operations.filter((o) => o.api === 'unserved');
  const served = operations.filter((o) => o.api !== 'unserved');
  const weight = (o: Operation) =>
    1 + (o.body ? 0.6 : 0) + (o.query.length > 3 ? 0.4 : 0) + (o.params.length > 0 ? 0.2 : 0);
  const left = Math.max(0, requestCount - unserved.length * 3);
  const total = served.reduce((s, o) => s + weight(o), 0);
  return new Map([
    ...unserved.map((o) => [o, 3] as const),
    ...served.map((o) => [o, Math.max(20, Math.round((left * weight(o)) / total))] as const),
  ]);
}

function generateCases(): Case[] {
  const rng = new Rng(seed);
  const cases: Case[] = [];
  for (const [op, n] of allocation()) for (let i = 0; i < n; i++) cases.push(generateCase(rng, op, cases.length));
  // Interleave operations; deletes of real records come last, so the other cases still find them.
  for (let i = cases.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [cases[i], cases[j]] = [cases[j], cases[i]];
  }
  return [...cases.filter((c) => c.method !== 'DELETE'), ...cases.filter((c) => c.method === 'DELETE')];
}

// ---------------------------------------------------------------------------------------------------------------
// Sending

interface Answer {
  status?: number;
  contentType?: string;
  body: string;
  /** why there is no (complete) answer */
  error?: string;
  ms: number;
}

function sendOnce(c: Case): Promise<Answer & { reused?: boolean }> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let status: number | undefined;
    let contentType: string | undefined;
    const chunks: Buffer[] = [];
    let req: http.ClientRequest;
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        status,
        contentType,
        body: Buffer.concat(chunks).toString('utf8'),
        error,
        ms: performance.now() - started,
        reused: req?.reusedSocket,
      });
    };
    const timer = setTimeout(
      () => req?.destroy(new Error(`no answer within ${answerTimeoutMs / 1000} s`)),
      answerTimeoutMs,
    );
    try {
      req = http.request({
        host: '127.0.0.1',
        port,
        method: c.method,
        path: c.path,
        agent,
        headers: { ...c.headers, ...(c.body ? { 'content-length': String(c.body.length) } : {}) },
      });
    } catch (e) {
      finish(`the test could not send it: ${(e as Error).message}`);
      return;
    }
    req.on('response', (res) => {
      status = res.statusCode;
      contentType = res.headers['content-type'];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => finish());
      res.on('error', (e) => finish(`the answer broke off: ${e.message}`));
      res.on('close', () => finish(res.complete ? undefined : 'the answer broke off'));
    });
    req.on('error', (e) => finish(e.message));
    req.end(c.body);
  });
}

/** Sends a case; a kept-alive connection the server closed just before reuse is retried once on a new one. */
async function send(c: Case): Promise<Answer> {
  const a = await sendOnce(c);
  if (a.status === undefined && a.reused && /ECONNRESET|socket hang up/.test(a.error ?? '')) return sendOnce(c);
  return a;
}

async function runAll<T, R>(items: T[], worker: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await worker(items[i]);
      }
    }),
  );
  return results;
}

// ---------------------------------------------------------------------------------------------------------------
// Judging answers

const statusOfCode: Record<number, number> = {
  3: 400,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  12: 501,
  13: 500,
  14: 503,
  16: 401,
};
const transportStatuses = [405, 408, 413, 415, 417, 431];
const errorInfo = 'type.googleapis.com/google.rpc.ErrorInfo';

const leaks: [string, RegExp][] = [
  ['a stack trace', /\bat [^()\n"]{1,200} \([^()\n"]*:\d+:\d+\)|\\n\s+at \S|\n\s+at \S/],
  [
    'SQL',
    /SQLITE|\bselect\s+[\w"`*.,\s]+\sfrom\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\s+[`"]?\w+[`"]?\s+set\b/i,
  ],
  ['a file path', /\/work\/|\/tmp\/|node_modules|\.ts:|\.js:\d|file:\/\//],
];

interface Problem {
  check: 'no answer' | '5xx' | 'not structured' | 'status does not match code' | 'not one ErrorInfo' | 'leak';
  detail: string;
}

/** What is wrong with an answer; `needsErrorInfo` outside v1; `notServed`: a call declared but not served. */
function judge(a: Answer, needsErrorInfo: boolean, notServed = false): Problem[] {
  if (a.status === undefined) return [{ check: 'no answer', detail: a.error ?? 'no answer' }];
  const problems = judgeLeaks(a.body);
  if (a.status >= 500 && !(notServed && a.status === 501))
    return [{ check: '5xx', detail: `status ${a.status}` }, ...problems];
  if (a.status < 400) return problems;
  return [...problems, ...judgeError(a, a.status, needsErrorInfo)];
}

/** A stack trace, SQL or a file path in the body. */
function judgeLeaks(body: string): Problem[] {
  const problems: Problem[] = [];
  for (const [what, pattern] of leaks) {
    const m = pattern.exec(body);
    if (m)
      problems.push({ check: 'leak', detail: `${what}: ...${body.slice(Math.max(0, m.index - 40), m.index + 80)}...` });
  }
  return problems;
}

interface ErrorBody {
  code: number;
  message: string;
  details: any[];
}

/** The body of an error answer if it is JSON {code: number, message: string, details: array}, sent as JSON. */
function errorBody(a: Answer): ErrorBody | undefined {
  if (!/^application\/json\b/.test(a.contentType ?? '')) return undefined;
  let body: any;
  try {
    body = JSON.parse(a.body);
  } catch {
    return undefined;
  }
  const shaped =
    body !== null &&
    typeof body === 'object' &&
    Number.isInteger(body.code) &&
    typeof body.message === 'string' &&
    Array.isArray(body.details);
  return shaped ? body : undefined;
}

/** An error answer: structured, its status the code's, and (outside v1) with exactly one ErrorInfo. */
function judgeError(a: Answer, status: number, needsErrorInfo: boolean): Problem[] {
  const body = errorBody(a);
  if (!body) {
    return [
      {
        check: 'not structured',
        detail: `status ${status}, content-type ${a.contentType ?? 'none'}, body ${a.body.length === 0 ? '(empty)' : JSON.stringify(a.body.slice(0, 120))}`,
      },
    ];
  }
  const problems: Problem[] = [];
  if (statusOfCode[body.code] !== status && !([3, 12].includes(body.code) && transportStatuses.includes(status))) {
    problems.push({ check: 'status does not match code', detail: `status ${status} with code ${body.code}` });
  }
  const infos = body.details.filter((d: any) => d?.['@type'] === errorInfo).length;
  if (needsErrorInfo && infos !== 1)
    problems.push({ check: 'not one ErrorInfo', detail: `${infos} ErrorInfo details` });
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// Reporting

interface Failure {
  c: Case;
  a: Answer;
  problem: Problem;
}

const clip = (s: string, n = 240) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);
/** Control characters (C0, DEL, C1) and surrogate halves, which would garble a terminal or a JSON report. */
const unprintable = (code: number) =>
  code <= 0x1f || (code >= 0x7f && code <= 0x9f) || (code >= 0xd800 && code <= 0xdfff);

/** The string with each unprintable UTF-16 unit written as a \u escape. */
function printable(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    out += unprintable(code) ? `\\u${code.toString(16).padStart(4, '0')}` : s[i];
  }
  return out;
}

/** What the server logged for each request id: its error line (with the stack), or its status and time. */
function serverLog(): Map<string, string> {
  const logged = new Map<string, string>();
  for (const line of server.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line);
      if (entry.level === 'error') logged.set(entry.requestId, String(entry.error ?? line));
      else if (!logged.has(entry.requestId))
        logged.set(entry.requestId, `answered ${entry.status} after ${entry.ms} ms`);
    } catch {
      // a partial line
    }
  }
  return logged;
}

/** Our tokens are long and change with every run: shown by name. */
const redact = (text: string) =>
  [tokens.owner, tokens.lowPrivilege]
    .filter(Boolean)
    .reduce((t, tok) => t.split(tok).join(tok === tokens.owner ? '<owner token>' : '<low-privilege token>'), text);

function describe(c: Case): string {
  const auth =
    c.token === 'garbage'
      ? ` authorization=${JSON.stringify(printable(clip(redact(c.headers.authorization ?? ''), 120)))}`
      : '';
  const bodyText = c.body
    ? ` body(${c.body.length} B${c.headers['content-type'] !== 'application/json' ? `, ${c.headers['content-type']}` : ''})=${printable(clip(c.body.toString('utf8'), 200))}`
    : '';
  return `#${c.index} ${c.method} ${clip(c.path, 300)}  token=${c.token}${auth}${bodyText}  [${c.labels.join(' ')}]`;
}

const checkOrder: Problem['check'][] = [
  'no answer',
  '5xx',
  'not structured',
  'status does not match code',
  'not one ErrorInfo',
  'leak',
];

/** Where the server failed, from its log: the error's first line (values elided) and the first frame in our code. */
function signatureOf(log: string | undefined): string {
  if (!log || !log.includes('\n'))
    return log && !log.startsWith('answered') ? log.replace(/'[^']*'|"[^"]*"/g, '…').slice(0, 100) : '';
  const [first, ...frames] = log.split('\n');
  const ours = frames.find((l) => !l.includes('node_modules') && /\((?:\/|file:)/.test(l));
  const where = ours
    ? /\(([^)]*)\)/.exec(ours)?.[1].replace(/^.*?\/(runtime|handlers|generated|scripts)\//, '$1/')
    : undefined;
  return `${first.replace(/'[^']*'|"[^"]*"/g, '…').slice(0, 100)}${where ? ` at ${where}` : ''}`;
}

/**
 * The class of each failure: what was wrong, the mutation that most often comes with it (a request may carry two),
 * and where the server failed if it logged an error. Requests that never got an answer are one class.
 */
function classify(failures: Failure[], log: Map<string, string>): Map<Failure, string> {
  const what = (f: Failure) => `${f.problem.check}${f.a.status ? ` ${f.a.status}` : ''}`;
  const labelCounts = new Map<string, number>();
  for (const f of failures)
    for (const l of f.c.labels) labelCounts.set(`${what(f)} ${l}`, (labelCounts.get(`${what(f)} ${l}`) ?? 0) + 1);
  return new Map(
    failures.map((f) => {
      if (f.problem.check === 'no answer') return [f, `[${what(f)}]`];
      const label = [...f.c.labels].sort(
        (a, b) => (labelCounts.get(`${what(f)} ${b}`) ?? 0) - (labelCounts.get(`${what(f)} ${a}`) ?? 0),
      )[0];
      const signature = signatureOf(log.get(f.c.headers['x-request-id']));
      return [f, `[${what(f)}] ${label}${signature ? ` — ${signature}` : ''}`];
    }),
  );
}

const operationOf = (c: Case) => `${c.method === c.op.method ? c.op.id : `${c.method} on ${c.op.id}`} (${c.op.api})`;

function report(failures: Failure[], summary: string, timings: Record<string, [number, number]>): string {
  const errors = serverLog();
  const classOf = classify(failures, errors);
  const classes = new Map<string, Failure[]>();
  for (const f of failures) classes.set(classOf.get(f)!, [...(classes.get(classOf.get(f)!) ?? []), f]);
  const ordered = [...classes.entries()].sort(
    ([, a], [, b]) =>
      checkOrder.indexOf(a[0].problem.check) - checkOrder.indexOf(b[0].problem.check) || b.length - a.length,
  );
  for (const [, members] of ordered)
    members.sort((x, y) => x.c.path.length + (x.c.body?.length ?? 0) - (y.c.path.length + (y.c.body?.length ?? 0)));
  const lines = [
    `fuzz: ${failures.length} failing requests in ${classes.size} classes (what was wrong, the mutation that caused it, where the server failed):`,
  ];
  const shown: number[] = [];
  let budget = 20;
  for (const [key, members] of ordered) {
    const ops = new Map<string, number>();
    for (const f of members) ops.set(operationOf(f.c), (ops.get(operationOf(f.c)) ?? 0) + 1);
    const opList = [...ops].sort((a, b) => b[1] - a[1]).map(([o, n]) => (n > 1 ? `${o} ×${n}` : o));
    lines.push(`  ${key}: ${members.length} requests on ${ops.size} operations: ${clip(opList.join(', '), 600)}`);
    if (budget <= 0) continue;
    budget--;
    const f = members[0];
    shown.push(f.c.index);
    lines.push(`    ${describe(f.c)}`);
    lines.push(
      `      -> ${f.a.status ?? 'no answer'}: ${f.problem.detail}${f.a.body ? `; body ${printable(clip(f.a.body, 200))}` : ''}`,
    );
    const log =
      errors.get(f.c.headers['x-request-id']) ??
      (f.problem.check === 'no answer' ? 'no line for this request' : undefined);
    if (log)
      lines.push(
        `      server log: ${log
          .split('\n')
          .slice(0, 4)
          .map((l) => l.trim())
          .join(' | ')}`,
      );
  }
  lines.push(
    `rerun the examples: FUZZ_SEED=${seed} FUZZ_CASES=${shown.join(',')} node --import tsx node_modules/uvu/bin.js test fuzz.test.ts --no-color`,
  );
  if (process.env.FUZZ_SERVER_LOG) writeFileSync(process.env.FUZZ_SERVER_LOG, server.output());
  if (process.env.FUZZ_REPORT) {
    writeFileSync(
      process.env.FUZZ_REPORT,
      JSON.stringify(
        {
          seed,
          summary,
          timings,
          failures: failures
            .map((f) => ({ ...f, class: classOf.get(f) }))
            .map(({ c, a, problem, class: cls }) => ({
              index: c.index,
              class: cls,
              op: operationOf(c),
              api: c.op.api,
              ms: Math.round(a.ms),
              labels: c.labels,
              method: c.method,
              path: clip(c.path, 2000),
              token: c.token,
              contentType: c.headers['content-type'],
              body: c.body ? printable(clip(c.body.toString('utf8'), 2000)) : undefined,
              status: a.status,
              problem: problem.detail,
              answer: clip(a.body, 1000),
              log: errors.get(c.headers['x-request-id']),
            })),
        },
        null,
        2,
      ),
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// The tests

test('the fuzz reaches every operation: each path and method of /openapi.json and each v1 route', () => {
  const counts = allocation();
  const v2 = operations.filter((o) => o.api === 'v2');
  const declared = Object.entries(openapi.paths as Record<string, object>).flatMap(([p, item]) =>
    Object.keys(item)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((m) => `${m.toUpperCase()} ${p}`),
  );
  assert.equal(v2.map((o) => o.id).sort(), declared.sort());
  assert.ok(operations.filter((o) => o.api === 'v1').length >= 40, 'the v1 routes');
  for (const o of operations) assert.ok((counts.get(o) ?? 0) >= (o.api === 'unserved' ? 3 : 20), o.id);
  const total = [...counts.values()].reduce((s, n) => s + n, 0);
  if (!process.env.FUZZ_REQUESTS) assert.ok(total >= 5000, `${total} requests`);
});

test('fuzz: no 5xx, every error structured, nothing leaked, over every operation', async () => {
  const all = generateCases();
  const cases = only ? all.filter((c) => only.has(c.index)) : all;
  const started = performance.now();
  const deletes = cases.filter((c) => c.method === 'DELETE');
  const answers = [
    ...(await runAll(
      cases.filter((c) => c.method !== 'DELETE'),
      send,
    )),
    ...(await runAll(deletes, send)),
  ];
  const ordered = [...cases.filter((c) => c.method !== 'DELETE'), ...deletes];
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const failures: Failure[] = [];
  ordered.forEach((c, i) => {
    for (const problem of judge(
      answers[i],
      !c.path.split('?')[0].includes('/v1/'),
      c.op.notServed || c.op.api === 'unserved',
    ))
      failures.push({ c, a: answers[i], problem });
  });
  const statuses = new Map<number | string, number>();
  for (const a of answers) statuses.set(a.status ?? 'none', (statuses.get(a.status ?? 'none') ?? 0) + 1);
  const slowest = ordered
    .map((c, i) => ({ c, ms: answers[i].ms }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 3);
  const summary =
    `fuzz: seed ${seed} (FUZZ_SEED), ${cases.length} requests over ${new Set(cases.map((c) => c.op.id)).size} operations in ${seconds} s (setup ${setupSeconds} s), ` +
    `concurrency ${concurrency}; statuses ${[...statuses]
      .sort()
      .map(([s, n]) => `${s}:${n}`)
      .join(' ')}\n` +
    `fuzz: slowest answers: ${slowest.map(({ c, ms }) => `#${c.index} ${Math.round(ms)} ms ${operationOf(c)} [${c.labels.join(' ')}]`).join('; ')}`;
  console.log(summary);
  if (server.child.exitCode !== null)
    assert.unreachable(
      `the server exited (${server.child.exitCode}) during the fuzz:\n${server.output().split('\n').slice(-30).join('\n')}`,
    );
  const ping = await fetch(`${server.url}/ping/v2/ping`).catch((e: Error) => e);
  assert.ok(
    !(ping instanceof Error) && ping.status === 200,
    `the server no longer answers after the fuzz: ${ping instanceof Error ? ping.message : ping.status}`,
  );
  if (failures.length > 0) {
    const timings: Record<string, [number, number]> = {};
    ordered.forEach((c, i) =>
      c.labels.forEach((l) => {
        const t = (timings[l] ??= [0, 0]);
        t[0]++;
        t[1] += Math.round(answers[i].ms);
      }),
    );
    const text = report(failures, summary, timings);
    console.log(text);
    assert.unreachable(`${failures.length} failing requests (seed ${seed}); see the classes above`);
  }
});

interface RawAnswer {
  status?: number;
  contentType?: string;
  body: string;
  head: string;
}

/** Sends bytes on a new connection and reads one answer (the connection is not half-closed: Node would drop the answer). */
function sendRaw(bytes: Buffer): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let settled = false;
    const parse = () => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const head = end < 0 ? text : text.slice(0, end);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1];
      const contentType = /\r\ncontent-type:\s*([^\r]*)/i.exec(head)?.[1];
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1];
      const body = end < 0 ? Buffer.alloc(0) : data.subarray(end + 4);
      const complete =
        end >= 0 &&
        (length !== undefined
          ? body.length >= Number(length)
          : /\r\ntransfer-encoding:\s*chunked/i.test(head)
            ? body.includes('0\r\n\r\n')
            : false);
      return {
        answer: { status: status ? Number(status) : undefined, contentType, body: body.toString('utf8'), head },
        complete,
      };
    };
    const done = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parse().answer);
    };
    const timer = setTimeout(done, 3000);
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      if (parse().complete) done();
    });
    socket.on('close', done);
    socket.on('error', done);
    socket.write(bytes);
  });
}

test("fuzz: requests that Node's HTTP parser refuses still get a structured JSON error", async () => {
  const failures: string[] = [];
  const cases = rawCases('/registry/v2/repos', `Bearer ${tokens.owner}`);
  const answers = await Promise.all(cases.map((raw) => sendRaw(raw.bytes)));
  for (const [i, raw] of cases.entries()) {
    const a = answers[i];
    const problems =
      a.status === undefined
        ? [{ check: 'no answer', detail: 'the connection closed without an answer' }]
        : judge({ ...a, ms: 0 }, true);
    for (const p of problems) {
      failures.push(
        `  [${p.check}${a.status ? ` ${a.status}` : ''}] ${raw.label}: ${p.detail}\n    sent ${printable(clip(redact(raw.bytes.toString('latin1')), 200))}\n    got ${printable(clip(a.head.split('\r\n').slice(0, 3).join(' | '), 160))}${a.body ? ` body ${printable(clip(a.body, 120))}` : ''}`,
      );
    }
  }
  if (failures.length > 0) {
    console.log(`fuzz (raw sockets): ${failures.length} failures\n${failures.join('\n')}`);
    assert.unreachable(`${failures.length} raw requests without a structured answer`);
  }
});

test.run();
