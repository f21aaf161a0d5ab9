// The defect catalogue: one planted departure from the spec per row, each breaking one spec line (or one decision
// of ours), with the rules that must report it. The suite's own tests plant every row through a proxy in front of
// our server, over HTTP and gRPC alike (a rewrite sees either protocol's call and answer as the same JSON), and
// `npm run conformance -- --coverage` prints, per rule, the defect that proves it can fail.

export type Protocol = 'http' | 'grpc';

/** A call as the proxy saw it, the same on either protocol. */
export interface Call {
  protocol: Protocol;
  /** the rpc's name (ListRepos); over HTTP the name of the plan's rpc of the route, absent for a route without one */
  rpc?: string;
  /** the rpc's full :path; over HTTP the plan's rpc of the route */
  rpcPath?: string;
  /** HTTP: the path and query; gRPC: the rpc's :path */
  path: string;
  /** HTTP: the path parameters and the query as sent; gRPC: the request's fields but the resource, as proto3 JSON */
  params: Record<string, any>;
  /** HTTP: the JSON body (its text when it is not JSON); gRPC: the message field holding the resource */
  resource?: any;
  authorization?: string;
}

/** An answer: HTTP's status and JSON body, or gRPC's as HTTP would give it (an error as its AIP-193 body). */
export interface Answer {
  status: number;
  body: any;
  /** HTTP only */
  headers?: Record<string, string>;
}

export interface Defect {
  name: string;
  /** the spec id it breaks, `decision` for a rule that checks a decision of ours, `declared` for one of spec/'s */
  breaks: string;
  /** full rule names that must fail with it planted */
  proves: string[];
  over: Protocol[];
  /** what the failure must say beyond its expectation, where the row checks a nuance */
  reports?: RegExp;
  request?: (call: Call) => Call;
  answer?: (answer: Answer, call: Call) => Answer;
}

const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** A parameter however the call spells it: page_size, pageSize, uidp.children_of or gRPC's uidp.childrenOf. */
export function param(call: Call, name: string): any {
  for (const k of [name, camel(name)]) if (call.params[k] !== undefined) return call.params[k];
  const [head, rest] = name.split('.');
  return rest === undefined ? undefined : call.params[head]?.[camel(rest)];
}

/** The call without a parameter, however spelled. */
function without(call: Call, name: string): Call {
  const params = { ...call.params };
  for (const k of [name, camel(name)]) delete params[k];
  const [head, rest] = name.split('.');
  if (rest !== undefined && typeof params[head] === 'object') {
    params[head] = { ...params[head] };
    delete params[head][camel(rest)];
  }
  return { ...call, params };
}

/** The call with a parameter set, spelled as the protocol spells it. */
function withParam(call: Call, name: string, value: unknown): Call {
  const c = without(call, name);
  const [head, rest] = name.split('.');
  if (call.protocol === 'http') c.params[name] = value;
  else if (rest !== undefined) c.params[head] = { ...c.params[head], [camel(rest)]: value };
  else c.params[camel(name)] = value;
  return c;
}

const items = (b: any) => Object.entries(b ?? {}).find(([, v]) => Array.isArray(v)) as [string, any[]] | undefined;
/** A list answer with its items changed. */
function listWith(a: Answer, change: (items: any[]) => any[]): Answer {
  const found = items(a.body);
  return found && a.status === 200 ? { ...a, body: { ...a.body, [found[0]]: change(found[1]) } } : a;
}

/** The subject of a bearer JWT, unverified (the proxy only tells callers apart). */
function subjectOf(authorization: string | undefined): string | undefined {
  const payload = /^Bearer [^.]+\.([^.]+)\./.exec(authorization ?? '')?.[1];
  try {
    return payload ? JSON.parse(Buffer.from(payload, 'base64url').toString()).sub : undefined;
  } catch {
    return undefined;
  }
}

const isList = (call: Call, rpc = 'ListRepos') => call.rpc === rpc;
const maskOf = (call: Call) => {
  const m = param(call, 'update_mask');
  return typeof m === 'string' ? m : (m?.paths ?? []).join(',');
};
/** A detail of an error body changed. */
function detail(a: Answer, type: string, change: (d: any) => any): Answer {
  if (a.status < 400 || !Array.isArray(a.body?.details)) return a;
  const details = a.body.details.map((d: any) => (d['@type']?.endsWith(`google.rpc.${type}`) ? change(d) : d));
  return { ...a, body: { ...a.body, details } };
}
const error = (status: number, code: number, reason: string): Answer => ({
  status,
  body: {
    code,
    message: reason,
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'registry.platform.dev' }],
  },
});
const both: Protocol[] = ['http', 'grpc'];
const repos = 'registry.repos';

/** Departures of creates and their validation. */
function createDefects(): Defect[] {
  return [
    {
      name: 'a created uid outside its parent',
      breaks: 'spec:2.uid.shape',
      proves: [`${repos}/create/returns-resource`],
      over: both,
      answer: (a, c) =>
        c.rpc === 'CreateRepo' && a.status === 200
          ? { ...a, body: { ...a.body, uid: a.body.uid.split('/').pop() } }
          : a,
    },
    {
      name: 'an output-only createTime taken from the body',
      breaks: 'decision',
      proves: [`${repos}/create/ignores-output-only`],
      over: both,
      answer: (a, c) =>
        c.rpc === 'CreateRepo' && a.status === 200 && c.resource?.createTime
          ? { ...a, body: { ...a.body, createTime: c.resource.createTime } }
          : a,
    },
    {
      name: 'a validation message without the field',
      breaks: 'spec:7.message',
      proves: [`${repos}/create/requires-name`],
      over: both,
      answer: (a) => (a.status === 400 ? { ...a, body: { ...a.body, message: 'Invalid argument: bad request' } } : a),
    },
    {
      name: 'field violations naming no field',
      breaks: 'spec:7.badrequest',
      proves: [`${repos}/create/rejects-invalid-name`],
      over: both,
      answer: (a) =>
        detail(a, 'BadRequest', (d) => ({
          ...d,
          fieldViolations: d.fieldViolations.map((v: any) => ({ ...v, field: 'body' })),
        })),
    },
    {
      name: 'upper case folded to lower case and accepted',
      breaks: 'spec:2.identity.name',
      proves: ['iam.identities/create/pattern-excludes-name'],
      over: both,
      request: (c) =>
        c.rpc === 'CreateIdentity' && typeof c.resource?.name === 'string'
          ? { ...c, resource: { ...c.resource, name: c.resource.name.toLowerCase() } }
          : c,
    },
    {
      name: 'a second repo of the same name in one group answered as a bad request',
      breaks: 'decision',
      proves: [`${repos}/create/natural-key-taken-once`],
      over: both,
      answer: (a, c) => (c.rpc === 'CreateRepo' && a.status === 409 ? error(400, 3, 'INVALID_ARGUMENT') : a),
    },
    {
      name: 'only the first failed field reported',
      breaks: 'spec:7.badrequest',
      proves: ['registry.tags/create/one-violation-per-field'],
      over: both,
      answer: (a) => detail(a, 'BadRequest', (d) => ({ ...d, fieldViolations: d.fieldViolations.slice(0, 1) })),
    },
  ];
}

/** Departures of reads: get, list envelopes, page sizes, the last page. */
function readDefects(): Defect[] {
  return [
    {
      name: 'a get answering another name than the create',
      breaks: 'spec:1.conv.3',
      proves: [`${repos}/get/returns-created`],
      over: both,
      answer: (a, c) =>
        c.rpc === 'GetRepo' && a.status === 200 ? { ...a, body: { ...a.body, name: `${a.body.name}-x` } } : a,
    },
    {
      name: 'a get of a listed advisory answering another artifact',
      breaks: 'spec:1.conv.3',
      proves: ['vulnerabilities.advisories/get/returns-listed'],
      over: both,
      answer: (a, c) =>
        c.rpc === 'GetAdvisory' && a.status === 200 ? { ...a, body: { ...a.body, artifactName: 'another' } } : a,
    },
    {
      name: 'NOT_FOUND answered as INTERNAL',
      breaks: 'spec:7.not-found',
      proves: [`${repos}/get/not-found-has-resource-info`],
      over: both,
      answer: (a) => (a.status === 404 ? error(500, 13, 'INTERNAL') : a),
    },
    {
      name: 'totalCount off by one',
      breaks: 'spec:2.envelope.totalCount',
      proves: [`${repos}/list/envelope`],
      over: both,
      answer: (a, c) =>
        isList(c) && a.body?.totalCount
          ? { ...a, body: { ...a.body, totalCount: String(Number(a.body.totalCount) + 1) } }
          : a,
    },
    {
      name: 'more than 200 items for a page_size above the maximum',
      breaks: 'spec:4.list.page_size.max',
      proves: [`${repos}/list/page-size-bounds`],
      over: both,
      answer: (a, c) =>
        isList(c) && Number(param(c, 'page_size')) > 200
          ? listWith(a, (xs) => [...xs, ...Array.from({ length: 201 }, (_, i) => ({ uid: `${i}`.padStart(40, '0') }))])
          : a,
    },
    {
      name: 'pages capped at 100',
      breaks: 'spec:4.list.page_size.max',
      proves: [`${repos}/list/page-size-max`],
      over: both,
      answer: (a, c) => (isList(c) ? listWith(a, (xs) => xs.slice(0, 100)) : a),
    },
    {
      name: 'a default page size of 20',
      breaks: 'spec:4.list.page_size.default',
      proves: [`${repos}/list/page-size-default`],
      over: both,
      answer: (a, c) => (isList(c) && !param(c, 'page_size') ? listWith(a, (xs) => xs.slice(0, 20)) : a),
    },
    {
      name: 'a nextPageToken on the exactly full last page, leading to an empty page',
      breaks: 'spec:2.envelope.nextPageToken',
      proves: [`${repos}/list/exact-last-page`],
      over: both,
      reports: /the lenient reading holds/,
      answer: (a, c) => {
        if (!isList(c)) return a;
        if (param(c, 'page_token') === 'the-end')
          return { status: 200, body: { repos: [], totalCount: '8', skipped: 0 } };
        const full = items(a.body)?.[1].length === Number(param(c, 'page_size'));
        return param(c, 'page_token') && !a.body?.nextPageToken && full
          ? { ...a, body: { ...a.body, nextPageToken: 'the-end' } }
          : a;
      },
    },
  ];
}

/** Departures of walking a list: freshness, page boundaries, order, skip, tokens, scope, filters. */
function walkDefects(): Defect[] {
  const totals = new Map<string, string>();
  return [
    {
      name: 'a totalCount that does not follow writes',
      breaks: 'spec:2.envelope.totalCount',
      proves: [`${repos}/list/fresh-after-writes`],
      over: both,
      answer: (a, c) => {
        if (!isList(c) || !a.body?.totalCount) return a;
        const key = `${c.protocol} ${JSON.stringify(c.params)}`;
        if (!totals.has(key)) totals.set(key, a.body.totalCount);
        return { ...a, body: { ...a.body, totalCount: totals.get(key) } };
      },
    },
    {
      name: 'an item lost at each page boundary',
      breaks: 'spec:4.list.page_token',
      proves: [`${repos}/list/page-walk-size-1`, `${repos}/list/page-walk-size-7`],
      over: both,
      answer: (a, c) => (isList(c) && a.body?.nextPageToken ? listWith(a, (xs) => xs.slice(0, -1)) : a),
    },
    {
      name: 'order_by desc ignored',
      breaks: 'spec:4.list.order_by',
      proves: [`${repos}/list/order-by-name-desc`],
      over: both,
      request: (c) =>
        isList(c) && /desc$/.test(param(c, 'order_by') ?? '')
          ? withParam(c, 'order_by', param(c, 'order_by').replace(/ desc$/, ''))
          : c,
    },
    {
      name: 'skipped not echoed',
      breaks: 'spec:2.envelope.skipped',
      proves: [`${repos}/list/skip`],
      over: both,
      answer: (a, c) => (isList(c) && a.status === 200 ? { ...a, body: { ...a.body, skipped: 0 } } : a),
    },
    {
      name: 'a page token taken under another order',
      breaks: 'decision',
      proves: [`${repos}/list/page-token-bound-to-query`],
      over: both,
      answer: (a, c) =>
        isList(c) && param(c, 'page_token') && /desc/.test(param(c, 'order_by') ?? '') && a.status === 400
          ? { status: 200, body: { totalCount: '0', skipped: 0 } }
          : a,
    },
    {
      name: 'a changed page token taken',
      breaks: 'decision',
      proves: [`${repos}/list/page-token-tamper-rejected`],
      over: both,
      answer: (a, c) =>
        isList(c) && param(c, 'page_token') && param(c, 'order_by') === 'uid' && a.status === 400
          ? { status: 200, body: { totalCount: '0', skipped: 0 } }
          : a,
    },
    {
      name: 'children_of answered as descendants_of',
      breaks: 'spec:4.list.scope',
      proves: [`${repos}/list/children-of-vs-descendants-of`],
      over: both,
      request: (c) => {
        const parent = param(c, 'uidp.children_of');
        return isList(c) && parent ? withParam(without(c, 'uidp.children_of'), 'uidp.descendants_of', parent) : c;
      },
    },
    {
      name: 'the name filter matching more than the exact name',
      breaks: 'spec:4.rules.8',
      proves: [`${repos}/list/filter-name`],
      over: both,
      answer: (a, c) =>
        isList(c) && param(c, 'name')
          ? listWith(a, (xs) => (xs[0] ? [...xs, { ...xs[0], uid: `${xs[0].uid}0`, name: `${xs[0].name}-more` }] : xs))
          : a,
    },
    {
      name: 'a range filter (updatedSince) ignored',
      breaks: 'declared',
      proves: ['registry.tags/list/filter-updatedSince'],
      over: both,
      request: (c) => (isList(c, 'ListTags') && param(c, 'updatedSince') ? without(c, 'updatedSince') : c),
    },
  ];
}

/** Departures of updates and deletes. */
function writeDefects(): Defect[] {
  /** identity uid -> the authorization of the caller who bound it to a role */
  const binders = new Map<string, string>();
  const deleted = new Set<string>();
  const emptied = new Set<string>();
  const updates = (c: Call) => c.rpc === 'UpdateRepo';
  return [
    {
      name: 'an update without a mask changing a field it was not sent',
      breaks: 'spec:4.rules.3',
      proves: [`${repos}/update/no-mask-changes-present-fields`],
      over: both,
      answer: (a, c) =>
        updates(c) && !maskOf(c) && a.status === 200 ? { ...a, body: { ...a.body, name: `${a.body.name}-x` } } : a,
    },
    {
      name: 'the update mask ignored',
      breaks: 'spec:4.rules.4',
      proves: [`${repos}/update/mask-ignores-other-fields`],
      over: both,
      request: (c) => (updates(c) && maskOf(c) && maskOf(c) !== '*' ? without(c, 'update_mask') : c),
    },
    {
      name: 'updateMask=* merging instead of replacing',
      breaks: 'spec:4.rules.4',
      proves: [`${repos}/update/star-replaces`],
      over: both,
      request: (c) => (updates(c) && maskOf(c) === '*' ? without(c, 'update_mask') : c),
    },
    {
      name: 'a mask naming no field taken',
      breaks: 'decision',
      proves: [`${repos}/update/unknown-mask-rejected`],
      over: both,
      answer: (a, c) => (updates(c) && a.status === 400 ? { status: 200, body: {} } : a),
    },
    {
      name: 'a deleted record still found',
      breaks: 'spec:4.rules.5',
      proves: [`${repos}/delete/then-not-found`],
      over: both,
      answer: (a, c) => {
        if (c.rpc === 'DeleteRepo') deleted.add(param(c, 'uid'));
        if (c.rpc === 'GetRepo' && deleted.has(param(c, 'uid')) && a.status === 404)
          return { status: 200, body: { uid: param(c, 'uid'), name: 'still-here' } };
        return a;
      },
    },
    {
      name: "a repo's tags left behind by its delete",
      breaks: 'declared',
      proves: ['registry.repos/delete/cascades-to-tags'],
      over: both,
      answer: (a, c) => {
        if (c.rpc === 'DeleteRepo' && a.status === 200) emptied.add(param(c, 'uid'));
        const uid = String(param(c, 'uid') ?? '');
        const under = [...emptied].some((repo) => uid.startsWith(`${repo}/`));
        return c.rpc === 'GetTag' && a.status === 404 && under
          ? { status: 200, body: { uid, name: 'left-behind', digest: `sha256:${'0'.repeat(64)}` } }
          : a;
      },
    },
    {
      name: 'a repo deleted by a caller without CAP_REPO_DELETE',
      breaks: 'spec:5.2',
      proves: ['registry.repos/access/each-operation-needs-its-capability'],
      over: both,
      answer: (a, c) => (c.rpc === 'DeleteRepo' && a.status === 403 ? { status: 200, body: {} } : a),
    },
    {
      // The bound identity's calls are made as the one who bound it (its token swapped for theirs), as a server
      // does that checks only that a caller holds some role.
      name: 'every capability granted to any identity bound to some role',
      breaks: 'spec:5.2',
      proves: [
        'registry.repos/access/each-operation-needs-its-capability',
        'registry.tags/access/each-operation-needs-its-capability',
      ],
      over: both,
      request: (c) => {
        if (c.rpc === 'CreateRoleBinding' && typeof c.resource?.identityUid === 'string' && c.authorization)
          binders.set(c.resource.identityUid, c.authorization);
        const binder = binders.get(subjectOf(c.authorization) ?? '');
        return binder ? { ...c, authorization: binder } : c;
      },
    },
    {
      name: 'a delete refused for children without RESOURCE_NOT_EMPTY',
      breaks: 'spec:7.not-empty',
      proves: ['iam.groups/delete/refused-when-not-empty'],
      over: both,
      answer: (a) =>
        detail(a, 'PreconditionFailure', (d) => ({
          ...d,
          violations: d.violations.map((v: any) => ({ ...v, type: 'HAS_CHILDREN' })),
        })),
    },
  ];
}

/** Departures of the API as a whole: errors, tokens, headers, versions, special resources. */
function apiDefects(): Defect[] {
  return [
    {
      name: 'an unknown path answered HTTP 200',
      breaks: 'decision',
      proves: ['api/unknown-route-not-found'],
      over: ['http'],
      answer: (a, c) => (!c.rpc && a.status === 404 ? { status: 200, body: {} } : a),
    },
    {
      name: 'a body that is not JSON answered as INTERNAL',
      breaks: 'decision',
      proves: ['api/malformed-json-invalid-argument'],
      over: ['http'],
      answer: (a, c) => (typeof c.resource === 'string' && a.status === 400 ? error(500, 13, 'INTERNAL') : a),
    },
    {
      name: 'an ErrorInfo domain not of the iam.<service>.dev shape',
      breaks: 'spec:7.errorinfo',
      proves: ['api/error-body-shape'],
      over: both,
      answer: (a) => detail(a, 'ErrorInfo', (d) => ({ ...d, domain: 'errors.example' })),
    },
    {
      name: 'no token answered as PERMISSION_DENIED',
      breaks: 'spec:5.1',
      proves: ['api/no-token-unauthenticated'],
      over: both,
      answer: (a, c) => (!c.authorization && a.status === 401 ? error(403, 7, 'PERMISSION_DENIED') : a),
    },
    {
      name: 'a forged token answered as INTERNAL',
      breaks: 'spec:5.1',
      proves: ['api/bad-token-unauthenticated'],
      over: both,
      answer: (a, c) => (c.authorization && a.status === 401 ? error(500, 13, 'INTERNAL') : a),
    },
    {
      name: 'a caller without grants told that a record does not exist',
      breaks: 'spec:5.2',
      proves: ['api/low-privilege-permission-denied'],
      over: both,
      answer: (a, c) => (c.rpc?.startsWith('Get') && a.status === 403 ? error(404, 5, 'NOT_FOUND') : a),
    },
    {
      name: 'no built-in viewer role',
      breaks: 'spec:2.role.viewer',
      proves: ['api/built-in-viewer-role'],
      over: both,
      answer: (a, c) => (c.rpc === 'ListRoles' ? listWith(a, () => []) : a),
    },
    {
      name: 'answers as text/plain',
      breaks: 'spec:4.json',
      proves: ['api/json-answers'],
      over: ['http'],
      answer: (a) => ({ ...a, headers: { ...a.headers, 'content-type': 'text/plain' } }),
    },
    {
      name: 'a Sunset header on a generally available version',
      breaks: 'spec:9.3',
      proves: ['api/v1-beside-v2', 'api/json-answers'],
      over: ['http'],
      answer: (a) => ({ ...a, headers: { ...a.headers, sunset: 'Wed, 01 Jan 2031 00:00:00 GMT' } }),
    },
    {
      name: 'an identity created without lastSeenTime',
      breaks: 'spec:2.identity.lastSeenTime',
      proves: ['api/identity-create-shows-last-seen'],
      over: both,
      answer: (a, c) => (c.rpc === 'CreateIdentity' ? { ...a, body: { ...a.body, lastSeenTime: undefined } } : a),
    },
    {
      name: 'a role binding answered without its identity',
      breaks: 'spec:2.rolebinding.hydrated',
      proves: ['api/role-binding-hydrated'],
      over: both,
      answer: (a, c) => (c.rpc === 'CreateRoleBinding' ? { ...a, body: { ...a.body, identity: undefined } } : a),
    },
    {
      name: 'deprecated tags filtered out by the server',
      breaks: 'spec:4.rules.6',
      proves: ['api/tags-deprecated-listed'],
      over: both,
      answer: (a, c) => (c.rpc === 'ListTags' ? listWith(a, (xs) => xs.filter((t) => !t.deprecated)) : a),
    },
  ];
}

/** Departures of the gRPC surfaces no HTTP route mirrors. */
function grpcSurfaceDefects(): Defect[] {
  return [
    {
      name: 'a v2beta1 name answering another shape than v2',
      breaks: 'spec:9.2',
      proves: ['api/v2beta1-names'],
      over: ['grpc'],
      answer: (a, c) =>
        c.rpcPath?.includes('.v2beta1.') && c.rpc === 'GetRepo' && a.status === 200
          ? { ...a, body: { ...a.body, name: undefined } }
          : a,
    },
    ...v1GrpcDefects(),
    {
      name: 'the gRPC token exchange answering a forged token as INTERNAL',
      breaks: 'decision',
      proves: ['api/token-exchange-grpc'],
      over: ['grpc'],
      answer: (a, c) => (c.rpc === 'Exchange' && a.status === 401 ? error(500, 13, 'INTERNAL') : a),
    },
  ];
}

/** Departures of v1 over gRPC (the reference's chainguard.platform.registry.Registry and its kin). */
function v1GrpcDefects(): Defect[] {
  const registry = (rpc: string) => (c: Call) => c.rpcPath === `/chainguard.platform.registry.Registry/${rpc}`;
  const gone = new Set<string>();
  return [
    {
      name: 'v1 ListRepos by id answering every repo of the group',
      breaks: 'spec:9.3',
      proves: ['api/v1-grpc-create-then-list'],
      over: ['grpc'],
      answer: (a, c) =>
        registry('ListRepos')(c) && param(c, 'id')
          ? listWith(a, (xs) => (xs[0] ? [...xs, { ...xs[0], id: `${xs[0].id}0` }] : xs))
          : a,
    },
    {
      name: 'v1 UpdateRepo merging instead of replacing',
      breaks: 'decision',
      proves: ['api/v1-grpc-update-replaces'],
      over: ['grpc'],
      answer: (a, c) =>
        registry('UpdateRepo')(c) && a.status === 200 && !c.params.description
          ? { ...a, body: { ...a.body, description: 'made over v1 gRPC' } }
          : a,
    },
    {
      name: 'v1 ListRepos by the id of a deleted repo answering NOT_FOUND',
      breaks: 'decision',
      proves: ['api/v1-grpc-list-gone-empty'],
      over: ['grpc'],
      answer: (a, c) => {
        if (registry('DeleteRepo')(c) && a.status === 200) gone.add(param(c, 'id'));
        return registry('ListRepos')(c) && gone.has(param(c, 'id')) ? error(404, 5, 'NOT_FOUND') : a;
      },
    },
    {
      name: 'v1 CreateRepo without a name answered as INTERNAL',
      breaks: 'spec:7.badrequest',
      proves: ['api/v1-grpc-errors'],
      over: ['grpc'],
      answer: (a, c) => (registry('CreateRepo')(c) && a.status === 400 ? error(500, 13, 'INTERNAL') : a),
    },
  ];
}

/** The catalogue, made fresh for each use (a few rows keep what they saw, as a defective server would). */
export function defectCatalogue(): Defect[] {
  return [
    ...createDefects(),
    ...readDefects(),
    ...walkDefects(),
    ...writeDefects(),
    ...apiDefects(),
    ...grpcSurfaceDefects(),
  ];
}
