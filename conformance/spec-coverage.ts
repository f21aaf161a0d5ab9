// The spec coverage matrix: every statement of ../shared/spec/platform-api-v2.md that a server could break has an
// id (spec:<section>.<what>), and every conformance rule declares the ids it checks. A statement no rule checks
// says why: not observable from outside, or a gap not closed yet (named as such). A rule that goes beyond the
// spec (what the spec leaves "not shown") says so: it checks our documented decision, and `--profile spec`
// leaves it out, so that a correct foreign server is not failed for our choices.

import { defectCatalogue, type Defect, type Protocol } from './defects.js';

export interface SpecStatement {
  id: string;
  /** what the spec says, in short */
  says: string;
  /** why no rule checks it: "not observable: ..." or "gap: ..." */
  unchecked?: string;
}

export const specStatements: SpecStatement[] = [
  { id: 'spec:1.domains', says: 'each domain under its versioned prefix (/iam/v2/, /registry/v2/, ...)' },
  { id: 'spec:1.conv.1', says: 'every resource has uid, createTime, updateTime (a few responses omit one)' },
  { id: 'spec:1.conv.2', says: 'every List has cursor pagination, ordering, skip and a total count' },
  { id: 'spec:1.conv.3', says: 'Get fetches a single resource by uid' },
  { id: 'spec:1.conv.4', says: 'updates are partial: PATCH with a field mask' },
  { id: 'spec:1.conv.5', says: 'errors are structured (AIP-193 typed details)' },
  { id: 'spec:1.conv.6', says: 'hierarchy scoping by uidp.descendants_of and uidp.children_of' },
  { id: 'spec:1.conv.7', says: 'field names are camelCase in JSON' },
  { id: 'spec:2.envelope.items', says: 'a list answers its items under the plural resource name' },
  { id: 'spec:2.envelope.nextPageToken', says: 'nextPageToken: empty or absent when there are no more results' },
  { id: 'spec:2.envelope.totalCount', says: 'totalCount: an integer as a JSON string, across all pages' },
  { id: 'spec:2.envelope.skipped', says: 'skipped: equal to the requested skip, 0 when none' },
  { id: 'spec:2.uid.shape', says: 'the uid of a record under a group is <parent_group_uid>/<hex_id>' },
  {
    id: 'spec:2.uid.root',
    says: "a group's uid and a built-in role's uid are plain hexadecimal strings",
  },
  { id: 'spec:2.timestamps', says: 'timestamps are RFC 3339 UTC with millisecond precision' },
  { id: 'spec:2.repo.fields', says: 'a repo has uid, name, description, createTime, updateTime' },
  { id: 'spec:2.repo.name-filter', says: "a repo's name is exact-match filterable in List" },
  { id: 'spec:2.repo.description-updatable', says: "a repo's description is updatable" },
  {
    id: 'spec:2.tag.fields',
    says: 'a tag has name, digest (sha256:<hex>), deprecated, updateTime',
  },
  { id: 'spec:2.identity.name', says: "an identity's name is required and matches ^[a-z0-9 ._-]{1,}$" },
  { id: 'spec:2.identity.claimMatch', says: 'an identity has claimMatch {issuer, subject}' },
  {
    id: 'spec:2.identity.lastSeenTime',
    says: 'an identity create answers lastSeenTime',
  },
  {
    id: 'spec:2.role.viewer',
    says: 'a built-in role named viewer exists',
  },
  {
    id: 'spec:2.rolebinding.hydrated',
    says: 'a role binding answers identity, group and role objects, and createTime',
  },
  { id: 'spec:2.advisory.fields', says: 'an advisory has uid, advisoryId, artifactName, updateTime' },
  {
    id: 'spec:3.tag.deprecated',
    says: "the only state is a tag's boolean deprecated",
  },
  {
    id: 'spec:3.page-token.expiry',
    says: 'a page token expires 3 days after issue; an expired one restarts the query without error',
    unchecked: 'not observable: a run would have to wait 3 days for a token to expire',
  },
  { id: 'spec:4.parent', says: '{parent} in a create path is the group that will own the new resource' },
  {
    id: 'spec:4.json',
    says: 'request and response bodies are JSON; write requests carry Content-Type: application/json',
  },
  { id: 'spec:4.list.scope', says: 'uidp.descendants_of: the group and all below; uidp.children_of: direct children' },
  {
    id: 'spec:4.list.page_size.default',
    says: 'page_size defaults to 50',
  },
  { id: 'spec:4.list.page_size.max', says: 'page_size is at most 200' },
  { id: 'spec:4.list.page_token', says: 'page_token is the previous nextPageToken; omitted for the first page' },
  { id: 'spec:4.list.order_by', says: 'order_by: a sortable field, optionally " desc"; ascending by default' },
  { id: 'spec:4.list.skip', says: 'skip jumps over results, combinable with page_size and order_by' },
  { id: 'spec:4.list.order-across-pages', says: 'sort order is kept across cursors' },
  { id: 'spec:4.list.last-page', says: 'when nextPageToken is absent, the last page has been reached' },
  { id: 'spec:4.ops', says: 'the operations table: list, get, create, update and delete at their paths' },
  { id: 'spec:4.rules.1', says: 'create keeps the parent in the path and the fields directly in the body' },
  {
    id: 'spec:4.rules.2',
    says: 'an identity under a subgroup cannot see the registry of the root group',
    unchecked:
      'not observable: it needs a token for an identity the suite makes, and how tokens are issued is not shown (5.5)',
  },
  { id: 'spec:4.rules.3', says: 'PATCH without updateMask changes only the fields present' },
  { id: 'spec:4.rules.4', says: 'PATCH with updateMask changes only the listed fields; * replaces' },
  { id: 'spec:4.rules.5', says: 'DELETE answers an empty body; a group with children is FAILED_PRECONDITION' },
  {
    id: 'spec:4.rules.6',
    says: 'no v2 end-of-life tag call and no server-side deprecated filter: clients filter',
  },
  {
    id: 'spec:4.rules.7',
    says: 'no v2 vulnerability-report operation',
    unchecked: 'not observable: the spec names no path for the operation that does not exist',
  },
  { id: 'spec:4.rules.8', says: 'the name filter returns exact matches only' },
  { id: 'spec:4.rules.9', says: 'direct Get by uid for each resource with a Get' },
  { id: 'spec:5.1', says: 'every request carries Authorization: Bearer <token>' },
  { id: 'spec:5.2', says: 'access is identity-based: roles bound to identities in groups' },
  { id: 'spec:5.3', says: 'scope is the group hierarchy' },
  {
    id: 'spec:5.4',
    says: 'a token valid for v1 is valid for v2',
  },
  { id: 'spec:6.subscriptions', says: 'subscriptions: List, Get, Create, Delete under /events/v2/' },
  { id: 'spec:7.body', says: 'an error body has code, message and details, each detail with @type' },
  { id: 'spec:7.message', says: 'a validation message reads "Invalid argument: <field>: <description>"' },
  { id: 'spec:7.type-url', says: 'detail @type values are type.googleapis.com/<type>' },
  { id: 'spec:7.errorinfo', says: 'ErrorInfo has reason and domain (iam.<service>.dev for IAM)' },
  { id: 'spec:7.badrequest', says: 'validation: code 3 with a BadRequest field violation per failed field' },
  { id: 'spec:7.not-empty', says: 'deleting a group with children: code 9, PreconditionFailure RESOURCE_NOT_EMPTY' },
  { id: 'spec:7.not-found', says: 'a resource that does not exist: NOT_FOUND, HTTP 404, ResourceInfo' },
  { id: 'spec:7.dependent', says: 'any delete blocked by a dependent resource: PreconditionFailure' },
  { id: 'spec:7.rules.1', says: 'a missing resource is an error, not an empty HTTP 200' },
  { id: 'spec:8.page_size.max', says: 'page_size maximum 200' },
  {
    id: 'spec:8.page_size.default',
    says: 'page_size default 50',
  },
  {
    id: 'spec:8.page-token.lifetime',
    says: 'a page token lives 3 days',
    unchecked: 'not observable: a run would have to wait 3 days',
  },
  { id: 'spec:8.identity.name', says: 'identity names match ^[a-z0-9 ._-]{1,}$' },
  { id: 'spec:9.1', says: 'the version is a path segment per domain' },
  { id: 'spec:9.2', says: 'v2beta1 was renamed v2, shapes unchanged' },
  {
    id: 'spec:9.3',
    says: 'v1 stays beside v2; no deprecation or sunset headers',
  },
  { id: 'spec:9.4', says: 'the host is the same for v1 and v2' },
  { id: 'spec:9.5', says: 'v2: Get by uid, paged lists with totals, PATCH with masks, structured errors' },
  { id: 'spec:9.6', says: 'gRPC list fields are snake_case; their JSON rendering camelCase' },
];

export interface RuleCoverage {
  /** the spec ids the rule checks */
  checks: string[];
  /** set when the rule checks our documented decision beyond the spec: why */
  decision?: string;
  /**
   * set when the rule checks a feature the API's spec/ declares (a filter's kind, a cascade, an operation's
   * capability), planned wherever a spec declares it: which. The spec profile keeps it: it is the API's contract.
   */
  declared?: string;
  /** the protocols it runs over, when not both (headers are HTTP's; the v2beta1 names are gRPC's) */
  over?: Protocol[];
}

/** By rule (the part after the resource: list/envelope, api/error-body-shape); `*` rules by their pattern. */
export const ruleCoverage: Record<string, RuleCoverage> = {
  'create/returns-resource': {
    checks: [
      'spec:1.conv.1',
      'spec:1.conv.7',
      'spec:2.uid.shape',
      'spec:2.timestamps',
      'spec:2.repo.fields',
      'spec:4.parent',
      'spec:4.rules.1',
      'spec:4.ops',
    ],
  },
  'create/ignores-output-only': {
    checks: [],
    decision: 'AIP-203: output-only fields in a create body are ignored; the spec does not say',
  },
  'create/requires-*': { checks: ['spec:2.identity.name', 'spec:7.badrequest', 'spec:7.message', 'spec:1.conv.5'] },
  'create/rejects-invalid-*': { checks: ['spec:2.identity.name', 'spec:8.identity.name', 'spec:7.badrequest'] },
  'create/pattern-excludes-*': { checks: ['spec:2.identity.name', 'spec:8.identity.name'] },
  'create/one-violation-per-field': { checks: ['spec:7.badrequest'] },
  'create/natural-key-taken-once': {
    checks: [],
    decision:
      "a second record of the same natural key (a repo's name in its group) is ALREADY_EXISTS; the spec does not say",
  },
  'get/returns-created': {
    checks: [
      'spec:1.conv.3',
      'spec:4.rules.9',
      'spec:2.identity.claimMatch',
      'spec:4.ops',
      'spec:9.5',
      'spec:6.subscriptions',
    ],
  },
  'get/returns-listed': { checks: ['spec:1.conv.3', 'spec:4.rules.9', 'spec:2.advisory.fields'] },
  'get/not-found-has-resource-info': { checks: ['spec:7.not-found', 'spec:7.rules.1'] },
  'list/envelope': {
    checks: [
      'spec:1.domains',
      'spec:1.conv.2',
      'spec:1.conv.7',
      'spec:2.envelope.items',
      'spec:2.envelope.totalCount',
      'spec:2.envelope.skipped',
      'spec:2.envelope.nextPageToken',
      'spec:9.1',
      'spec:9.5',
      'spec:9.6',
      'spec:6.subscriptions',
    ],
  },
  'list/page-size-bounds': { checks: ['spec:4.list.page_size.max', 'spec:8.page_size.max'] },
  'list/page-size-max': { checks: ['spec:4.list.page_size.max', 'spec:8.page_size.max'] },
  'list/page-size-default': {
    checks: ['spec:4.list.page_size.default', 'spec:8.page_size.default', 'spec:2.envelope.totalCount'],
  },
  'list/exact-last-page': { checks: ['spec:4.list.last-page', 'spec:2.envelope.nextPageToken'] },
  'list/fresh-after-writes': { checks: ['spec:2.envelope.totalCount', 'spec:2.envelope.items'] },
  'list/page-walk-size-1': {
    checks: ['spec:1.conv.2', 'spec:4.list.page_token', 'spec:4.list.last-page', 'spec:2.envelope.nextPageToken'],
  },
  'list/page-walk-size-7': {
    checks: ['spec:1.conv.2', 'spec:4.list.page_token', 'spec:4.list.last-page', 'spec:2.envelope.nextPageToken'],
  },
  'list/order-by-*': { checks: ['spec:4.list.order_by', 'spec:4.list.order-across-pages', 'spec:1.conv.2'] },
  'list/skip': { checks: ['spec:4.list.skip', 'spec:2.envelope.skipped', 'spec:2.envelope.totalCount'] },
  'list/page-token-bound-to-query': {
    checks: [],
    decision: 'a token is refused with another order or filter; the spec only calls it opaque',
  },
  'list/page-token-tamper-rejected': {
    checks: [],
    decision: 'a changed token is INVALID_ARGUMENT; the spec only calls it opaque',
  },
  'list/children-of-vs-descendants-of': {
    checks: ['spec:1.conv.6', 'spec:4.list.scope', 'spec:5.3'],
  },
  'list/filter-*': {
    checks: ['spec:2.repo.name-filter', 'spec:4.rules.8'],
    declared: 'each filter of spec/ by its kind: exact, anyOf, contains, atLeast, atMost, on records made with values',
  },
  'update/no-mask-changes-present-fields': {
    checks: ['spec:1.conv.4', 'spec:4.rules.3', 'spec:2.repo.description-updatable', 'spec:9.5'],
  },
  'update/mask-ignores-other-fields': { checks: ['spec:1.conv.4', 'spec:4.rules.4'] },
  'update/star-replaces': { checks: ['spec:4.rules.4'] },
  'update/unknown-mask-rejected': {
    checks: [],
    decision: 'AIP-134: a mask naming no field is INVALID_ARGUMENT; the spec does not say',
  },
  'delete/then-not-found': { checks: ['spec:4.rules.5', 'spec:7.not-found', 'spec:4.ops', 'spec:6.subscriptions'] },
  'delete/refused-when-not-empty': { checks: ['spec:4.rules.5', 'spec:7.not-empty', 'spec:7.dependent'] },
  'delete/cascades-to-*': {
    checks: [],
    declared: 'a child collection with onParentDelete: cascade goes with its deleted parent',
  },
  'access/each-operation-needs-its-capability': {
    checks: ['spec:5.2'],
    declared:
      "each operation's capability: without it create, get, update and delete are PERMISSION_DENIED, a list shows nothing",
  },
  'api/unknown-route-not-found': {
    checks: [],
    over: ['http'],
    decision: 'an unknown path is NOT_FOUND with an AIP-193 body; the spec does not say',
  },
  'api/malformed-json-invalid-argument': {
    checks: [],
    over: ['http'],
    decision: 'a body that is not JSON is INVALID_ARGUMENT; the spec does not say',
  },
  'api/error-body-shape': { checks: ['spec:7.body', 'spec:7.type-url', 'spec:7.errorinfo', 'spec:1.conv.5'] },
  'api/no-token-unauthenticated': { checks: ['spec:5.1'] },
  'api/bad-token-unauthenticated': { checks: ['spec:5.1'] },
  'api/low-privilege-permission-denied': { checks: ['spec:5.2'] },
  'api/built-in-viewer-role': { checks: ['spec:2.role.viewer', 'spec:2.uid.root'] },
  'api/json-answers': { checks: ['spec:4.json', 'spec:9.3'], over: ['http'] },
  'api/identity-create-shows-last-seen': { checks: ['spec:2.identity.lastSeenTime'] },
  'api/role-binding-hydrated': { checks: ['spec:2.rolebinding.hydrated', 'spec:1.conv.1'] },
  'api/v1-beside-v2': { checks: ['spec:5.4', 'spec:9.3', 'spec:9.4'], over: ['http'] },
  'api/v2beta1-names': { checks: ['spec:9.2'], over: ['grpc'] },
  'api/token-exchange-grpc': {
    checks: [],
    decision:
      "a forged upstream token at chainguard.platform.oidc.SecurityTokenService/Exchange is UNAUTHENTICATED, as the reference's clients exchange tokens over gRPC; the spec does not show how tokens are issued (5.5)",
    over: ['grpc'],
  },
  'api/tags-deprecated-listed': { checks: ['spec:2.tag.fields', 'spec:3.tag.deprecated', 'spec:4.rules.6'] },
  'api/v1-grpc-create-then-list': { checks: ['spec:9.3', 'spec:5.4'], over: ['grpc'] },
  'api/v1-grpc-update-replaces': {
    checks: [],
    decision:
      "v1's Update over gRPC replaces the whole record, as the reference's v1; the spec says only that v1 stays",
    over: ['grpc'],
  },
  'api/v1-grpc-list-gone-empty': {
    checks: [],
    decision:
      "v1's List by the id of a deleted record answers an empty list, as the reference's v1; the spec does not say",
    over: ['grpc'],
  },
  'api/v1-grpc-errors': { checks: ['spec:7.badrequest', 'spec:5.1', 'spec:5.2'], over: ['grpc'] },
};

/** The pattern of ruleCoverage a rule name (with or without the resource prefix) falls under. */
export function patternOf(rule: string): string | undefined {
  const name = rule.replace(/^[a-z]+\.[A-Za-z]+\//, '');
  if (ruleCoverage[name]) return name;
  return Object.keys(ruleCoverage).find((p) => p.endsWith('*') && name.startsWith(p.slice(0, -1)));
}

/** The coverage of a rule by its name (with or without the resource prefix), through `*` patterns. */
export function coverageOf(rule: string): RuleCoverage | undefined {
  const pattern = patternOf(rule);
  return pattern ? ruleCoverage[pattern] : undefined;
}

/** A defect breaks what its rule checks: a spec line of it, its decision or its declaration. */
export function breaksWhatItChecks(d: Defect, c: RuleCoverage): boolean {
  if (d.breaks === 'decision') return !!c.decision;
  if (d.breaks === 'declared') return !!c.declared;
  return c.checks.includes(d.breaks);
}

/** Per rule and protocol it runs over, the defects of the catalogue that prove it can fail (none: a gap). */
export function provenBy(): { rule: string; protocol: Protocol; defects: Defect[] }[] {
  const catalogue = defectCatalogue();
  return Object.entries(ruleCoverage).flatMap(([rule, c]) =>
    (c.over ?? (['http', 'grpc'] as Protocol[])).map((protocol) => ({
      rule,
      protocol,
      defects: catalogue.filter((d) => d.over.includes(protocol) && d.proves.some((r) => patternOf(r) === rule)),
    })),
  );
}

export interface MatrixRow extends SpecStatement {
  rules: string[];
}

/** Each spec statement with the rules (patterns) that check it. */
export function coverageMatrix(): MatrixRow[] {
  return specStatements.map((s) => ({
    ...s,
    rules: Object.entries(ruleCoverage)
      .filter(([, c]) => c.checks.includes(s.id))
      .map(([rule]) => rule),
  }));
}

/**
 * What is wrong with the matrix: ids checked by no rule and given no reason, ids rules name that do not exist, a
 * rule no defect proves able to fail, a defect breaking a line its rules do not check.
 */
export function coverageProblems(): string[] {
  const ids = new Set(specStatements.map((s) => s.id));
  const problems: string[] = [];
  for (const row of coverageMatrix())
    if (row.rules.length === 0 && !row.unchecked) problems.push(`${row.id}: no rule checks it and no reason is given`);
    else if (row.rules.length > 0 && row.unchecked)
      problems.push(`${row.id}: checked by ${row.rules.join(', ')}, yet says "${row.unchecked}"`);
  for (const [rule, c] of Object.entries(ruleCoverage)) {
    for (const id of c.checks) if (!ids.has(id)) problems.push(`${rule}: checks ${id}, which the matrix does not have`);
    if (c.checks.length === 0 && !c.decision && !c.declared)
      problems.push(`${rule}: checks no spec id and names no decision or declaration`);
  }
  for (const { rule, protocol, defects } of provenBy())
    if (defects.length === 0) problems.push(`${rule}: no planted defect proves it can fail over ${protocol}`);
  for (const d of defectCatalogue())
    for (const rule of d.proves) {
      const c = coverageOf(rule);
      if (!c) problems.push(`defect "${d.name}": proves ${rule}, which the matrix does not have`);
      else if (!breaksWhatItChecks(d, c))
        problems.push(`defect "${d.name}": breaks ${d.breaks}, which ${rule} does not check`);
    }
  return problems;
}

/** The matrix as text: each id, what checks it or why nothing does; then the rules that check decisions of ours. */
export function formatCoverage(): string {
  const rows = coverageMatrix();
  const lines = rows.map((r) =>
    r.rules.length > 0 ? `${r.id}  ${r.rules.join(', ')}` : `${r.id}  (unchecked: ${r.unchecked ?? 'NO REASON'})`,
  );
  const decisions = Object.entries(ruleCoverage)
    .filter(([, c]) => c.decision)
    .map(([rule, c]) => `${rule}  ${c.decision}`);
  const declared = Object.entries(ruleCoverage)
    .filter(([, c]) => c.declared)
    .map(([rule, c]) => `  ${rule}  ${c.declared}`);
  const checked = rows.filter((r) => r.rules.length > 0).length;
  const gaps = rows.filter((r) => r.unchecked?.startsWith('gap')).length;
  const proofs = provenBy().map(
    ({ rule, protocol, defects }) =>
      `  ${rule} over ${protocol}: ${defects.length > 0 ? defects.map((d) => `${d.name} (breaks ${d.breaks})`).join('; ') : 'NO DEFECT PROVES IT'}`,
  );
  return [
    ...lines,
    '',
    'rules beyond the spec (our documented decisions; --profile spec leaves them out):',
    ...decisions.map((d) => `  ${d}`),
    '',
    "rules of what spec/ declares (planned wherever an API's spec declares the feature; --profile spec keeps them):",
    ...declared,
    '',
    'each rule able to fail: the planted defect that proves it (conformance/defects.ts, test/conformance-defects-*):',
    ...proofs,
    '',
    `${rows.length} spec statements: ${checked} checked, ${gaps} gaps, ${rows.length - checked - gaps} not observable`,
  ].join('\n');
}
