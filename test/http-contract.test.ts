// Our /openapi.json beside the reference's published contract (test/facts/api-v2.json), operation by
// operation: every reference operation is in ours under the same method, path template, parameter names and
// operationId, with the same query parameters and the same fields in its request body and its answer, but for
// the departures listed below with why. A new difference fails the test, and so does a listed one that is gone.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

interface Operation {
  operationId?: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Schema {
  $ref?: string;
  properties?: Record<string, Schema>;
  allOf?: Schema[];
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const reference = JSON.parse(readFileSync('test/facts/api-v2.json', 'utf8')) as Document;
const ours = JSON.parse(readFileSync('generated/openapi.json', 'utf8')) as Document;

/** Query parameters any list of ours takes beyond the reference's: additions a reference client never sends. */
const additions = new Set([
  'skip',
  'uidp.ancestorsOf',
  'uidp.childrenOf',
  'uidp.descendantsOf',
  'uidp.inRoot',
  'uidp.ids',
  'updateMask',
]);

// No security reason keeps these out. What each does is said by the comments of the reference's protos (the SDK's
// proto/chainguard/platform/*/v2/*.proto, not copied into test/facts/); none is sent by the SDK's own code. Each is
// refused by name (INVALID_ARGUMENT), never ignored: docs/transports.md, "List filters refused".
const departures: Record<string, string> = {
  // Parameters we do not serve.
  'GET /advisory/v2/documents: query not served: cves':
    "matches the aliases of the advisories nested in each document: the list engine has no condition inside a record's nested lists",
  'GET /libraries/v2/artifacts: query not served: cudaVersion, remediated':
    'no field of an artifact (test/facts) holds a CUDA version or says it is remediated: nothing to match',
  'GET /registry/v2/tags: query not served: includeDates, includeEpochs, includeReferrers':
    'the reference hides tags named sha256-*, *-20yymmdd and *-r<n> unless these ask: a pattern match the list engine lacks on SQLite, and a change of what every tag list answers',
  'GET /vulnerabilities/v2/advisories: query not served: aliases, eventAuthors, eventReviewStates, eventReviewers, eventTypes, excludeEventAuthors, latestEventType, origin, query':
    "aliases, query and the event filters match inside an advisory's lists (aliases, events): a condition the list engine lacks; origin needs the subpackages of an origin package, which no record holds",
  'GET /sts/exchange: query not served: cap, identityProvider, scope, scopes':
    'a token of ours carries its identity alone: scoped and capability-limited tokens are not issued',
  'POST /sts/exchange: query not served: cap, identityProvider, scope, scopes':
    'a token of ours carries its identity alone: scoped and capability-limited tokens are not issued',
  'POST /sts/exchange_refresh_token: query not served: cap, scope, scopes':
    'a token of ours carries its identity alone: scoped and capability-limited tokens are not issued',
  'GET /sts/headless_sessions: query not served: code': 'not served (docs/transports.md, "Not served")',
  // Path parameter names.
  'GET /registry/v2/repos/{repoReadme.uid}/readme: path /registry/v2/repos/{uid}/readme':
    'a dotted parameter name is not one OpenAPI linters (Spectral path-params) can read',
  'PATCH /registry/v2/repos/{repoReadme.uid}/readme: path /registry/v2/repos/{uid}/readme':
    'a dotted parameter name is not one OpenAPI linters (Spectral path-params) can read',
  // Answers with more than the reference's.
  'GET /advisory/v2/documents: query adds orderBy, pageSize, pageToken': 'every list of ours pages',
  'GET /advisory/v2/images/resolvedVulns: query adds orderBy, pageSize, pageToken': 'every list of ours pages',
  'GET /advisory/v2/documents: answer adds nextPageToken, skipped, totalCount': 'every list of ours pages',
  'GET /advisory/v2/images/resolvedVulns: answer adds nextPageToken, skipped, totalCount': 'every list of ours pages',
  'GET /events/v2/subscriptions/{uid}: answer adds createTime, updateTime': 'every record of ours has its times',
  'POST /events/v2/subscriptions/{uid}: answer adds createTime, updateTime': 'every record of ours has its times',
  'POST /events/v2/subscriptions/{uid}: body adds createTime, updateTime': 'output only: accepted and ignored',
  'GET /iam/v2/externalGroupRoleMappings/{uid}: answer adds updateTime': 'every record of ours has its times',
  'POST /iam/v2/externalGroupRoleMappings/{uid}: answer adds updateTime': 'every record of ours has its times',
  'POST /iam/v2/externalGroupRoleMappings/{uid}: body adds updateTime': 'output only: accepted and ignored',
  'GET /iam/v2/groupInvites/{uid}: answer adds updateTime': 'every record of ours has its times',
  'POST /iam/v2/groupInvites/{uid}: answer adds updateTime': 'every record of ours has its times',
  'POST /iam/v2/groupInvites/{uid}: body adds updateTime': 'output only: accepted and ignored',
  'GET /registry/v2/tags/{uid}: answer adds createTime, gracePeriodExpiryDate, mainPackageName':
    'the spec shows a tag with these',
  'POST /registry/v2/tags/{uid}: answer adds createTime, gracePeriodExpiryDate, mainPackageName':
    'the spec shows a tag with these',
  'POST /registry/v2/tags/{uid}: body adds createTime, gracePeriodExpiryDate, mainPackageName':
    'output only (createTime) or kept by the import; accepted as the spec shows them',
  // Answers and bodies without fields of the reference's.
  'GET /iam/v2/groupInvites/{uid}: answer lacks ttl': 'ttl is input only',
  'POST /iam/v2/groupInvites/{uid}: answer lacks ttl': 'ttl is input only',
  // Calls not served (docs/transports.md, "Not served"): declared with the request, answered UNIMPLEMENTED.
  'GET /sts/headless_sessions: answer lacks ecdhPublicKey, encryptedIdtoken': 'not served',
  // Operations of ours alone.
  'POST /iam/v2/groupInvites:accept: ours alone': 'accepting an invite over v2 (the reference does it in v1 only)',
  'POST /iam/v2/groups: ours alone': 'a root group (an organization) made with no parent',
  'POST /iam/v2/identities: ours alone': 'a root identity made with no group',
  'GET /events/v2/deliveries: ours alone': 'event deliveries, readable (docs/events.md, "Guarantees and limits")',
  'GET /events/v2/deliveries/{uid}: ours alone': 'event deliveries, readable (docs/events.md, "Guarantees and limits")',
  'POST /events/v2/subscriptions/{uid}/deliveries:redrive: ours alone': 'failed deliveries put back on their way',
};

const methods = ['get', 'post', 'put', 'patch', 'delete'];
const shape = (method: string, path: string) => `${method} ${path.replace(/\{[^}]+\}/g, '{}')}`;

function operations(doc: Document): Map<string, { path: string; method: string; op: Operation }> {
  const out = new Map<string, { path: string; method: string; op: Operation }>();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item))
      if (methods.includes(method)) out.set(shape(method, path), { path, method, op });
  return out;
}

/** The top-level field names of a schema, through $ref and allOf. */
function fieldsOf(doc: Document, schema: Schema | undefined): Set<string> {
  let s = schema;
  while (s?.$ref) s = doc.components.schemas[s.$ref.split('/').pop()!];
  const names = new Set(Object.keys(s?.properties ?? {}));
  for (const part of s?.allOf ?? []) for (const n of fieldsOf(doc, part)) names.add(n);
  return names;
}

const bodyOf = (op: Operation) => Object.values(op.requestBody?.content ?? {})[0]?.schema;
const answerOf = (op: Operation) => op.responses['200']?.content?.['application/json']?.schema;
const queryOf = (op: Operation) => new Set((op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
const minus = (a: Set<string>, b: Set<string>) => [...a].filter((x) => !b.has(x)).sort();

function differences(): string[] {
  const out: string[] = [];
  const theirs = operations(reference);
  const mine = operations(ours);
  for (const [key, ref] of theirs) {
    const at = `${ref.method.toUpperCase()} ${ref.path}`;
    const our = mine.get(key);
    if (!our) {
      out.push(`${at}: missing`);
      continue;
    }
    if (our.op.operationId !== ref.op.operationId) out.push(`${at}: operationId ${our.op.operationId}`);
    if (our.path !== ref.path) out.push(`${at}: path ${our.path}`);
    const missing = minus(queryOf(ref.op), queryOf(our.op));
    if (missing.length) out.push(`${at}: query not served: ${missing.join(', ')}`);
    const extra = minus(queryOf(our.op), queryOf(ref.op)).filter((q) => !additions.has(q));
    if (extra.length) out.push(`${at}: query adds ${extra.join(', ')}`);
    for (const [what, of] of [
      ['answer', answerOf],
      ['body', bodyOf],
    ] as const) {
      const refFields = fieldsOf(reference, of(ref.op));
      const ourFields = fieldsOf(ours, of(our.op));
      const lacks = minus(refFields, ourFields);
      const adds = minus(ourFields, refFields);
      if (lacks.length) out.push(`${at}: ${what} lacks ${lacks.join(', ')}`);
      if (adds.length) out.push(`${at}: ${what} adds ${adds.join(', ')}`);
    }
  }
  for (const [key, our] of mine) if (!theirs.has(key)) out.push(`${our.method.toUpperCase()} ${our.path}: ours alone`);
  return out;
}

test('every reference operation is ours, named and shaped alike, but for the listed departures', () => {
  const found = differences();
  const unexplained = found.filter((d) => !departures[d]);
  const stale = Object.keys(departures).filter((d) => !found.includes(d));
  assert.equal(unexplained, [], 'differences not listed as departures');
  assert.equal(stale, [], 'departures listed that no longer differ: remove them');
  const served = [...operations(reference).keys()].filter((k) => operations(ours).has(k)).length;
  console.log(
    `  HTTP contract: ${served}/${operations(reference).size} reference operations in /openapi.json, ${found.length} documented departures`,
  );
  assert.is(served, operations(reference).size);
});

test('operationIds are unique, and each is <Service>_<Rpc> as the reference names them', () => {
  const ids = [...operations(ours).values()].map((o) => o.op.operationId ?? '');
  assert.equal(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
  );
  assert.equal(
    ids.filter((id) => !/^[A-Z][A-Za-z]+_[A-Z][A-Za-z0-9]+$/.test(id)),
    [],
  );
});

test.run();
