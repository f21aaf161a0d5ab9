// The fuzz test's map of the server: every operation it serves (each path and method of the generated OpenAPI
// document, each v1 route of the adapter and of handlers/v1-*.ts, the documents and the token exchange) and the
// operations of the reference contracts it does not serve, each with what a valid request looks like: which real
// record each path parameter names, the query parameters it declares and a valid body.
import { readFileSync } from 'node:fs';
import type { ApiModel, ResourceModel, V1Model } from '../../runtime/model/api-model.js';
import { exampleOf, Rng, type QueryKind, type Schema } from './fuzz-inputs.js';

/** Real records the test creates (or imports) before fuzzing, by kind; values are uids unless said otherwise. */
export interface Fixtures {
  org: string;
  group: string;
  subgroup: string;
  repo: string;
  tag: string;
  identity: string;
  role: string;
  roleBinding: string;
  identityProvider: string;
  accountAssociation: string;
  groupInvite: string;
  externalGroupRoleMapping: string;
  subscription: string;
  artifact: string;
  advisory: string;
  /** an event of the advisory (v1 names events by advisory uid and position) */
  advisoryEvent: string;
  /** the repo the imported images and vulnerability reports are under */
  imageRepo: string;
  /** an imported image's digest (sha256:...) */
  digest: string;
  /** a group invite's code (not a uid) */
  inviteCode: string;
  owner: string;
}

export type FixtureKind = Exclude<keyof Fixtures, 'digest' | 'inviteCode'>;
const uidKinds: FixtureKind[] = [
  'org',
  'group',
  'subgroup',
  'repo',
  'tag',
  'identity',
  'role',
  'roleBinding',
  'identityProvider',
  'accountAssociation',
  'groupInvite',
  'externalGroupRoleMapping',
  'subscription',
  'artifact',
  'advisory',
  'advisoryEvent',
];

/** A uid of another kind than `kind`, for "a real uid, but of the wrong thing". */
export function otherUid(rng: Rng, fx: Fixtures, kind: FixtureKind): string {
  return fx[rng.pick(uidKinds.filter((k) => k !== kind && fx[k] !== fx[kind]))];
}

const fixtureOfCollection: Record<string, FixtureKind> = {
  groups: 'group',
  identities: 'identity',
  roles: 'role',
  roleBindings: 'roleBinding',
  identityProviders: 'identityProvider',
  accountAssociations: 'accountAssociation',
  groupInvites: 'groupInvite',
  externalGroupRoleMappings: 'externalGroupRoleMapping',
  subscriptions: 'subscription',
  repos: 'repo',
  tags: 'tag',
  artifacts: 'artifact',
  advisories: 'advisory',
  artifactVersions: 'artifact',
};

export interface PathParam {
  name: string;
  /** the real record it names in a valid request; 'digest' is not a uid */
  fixture: FixtureKind | 'digest';
}

export interface QuerySpec {
  names: string[];
  kind: QueryKind;
  required?: boolean;
  /** a valid value, percent-encoded */
  valid(rng: Rng, fx: Fixtures): string;
}

export interface BodySpec {
  schema?: Schema;
  required: boolean;
  valid(rng: Rng, fx: Fixtures): unknown;
}

export interface Operation {
  /** "METHOD template": what failures are grouped by */
  id: string;
  /** v2: the generated OpenAPI document; v1: the v1 adapter and extensions; other: documents and the token exchange;
   * unserved: in a reference contract, not served here (a structured 404/405/501 is what is expected) */
  api: 'v2' | 'v1' | 'other' | 'unserved';
  /** declared but not served (x-unimplemented): a structured 501 UNIMPLEMENTED is the right answer */
  notServed?: boolean;
  method: string;
  template: string;
  params: PathParam[];
  query: QuerySpec[];
  body?: BodySpec;
}

interface OpenApiOperation {
  'x-unimplemented'?: string;
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema & { $ref?: string } }> };
}
type OpenApiDocument = {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, Schema> };
};

const httpMethods = ['get', 'post', 'put', 'patch', 'delete'];
const enc = encodeURIComponent;

/** snake_case to camelCase, per dotted segment: uidp.descendants_of -> uidp.descendantsOf */
const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** Resolves a local $ref, one level deep (the generated document nests no further). */
function resolve(
  doc: OpenApiDocument,
  s: (Schema & { $ref?: string }) | undefined,
): { schema?: Schema; name?: string } {
  if (!s?.$ref) return { schema: s };
  const name = s.$ref.split('/').pop()!;
  return { schema: doc.components?.schemas?.[name], name };
}

/** The kind of a query parameter, from its name and schema. */
function queryKind(name: string, s: Schema = {}): QueryKind {
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (name === 'uidp.ids') return 'uids';
  if (
    /^uidp\.(descendants_of|children_of|ancestors_of|descendantsOf|childrenOf|ancestorsOf)$/.test(name) ||
    ['identity', 'role', 'id', 'repoId'].includes(name)
  )
    return 'uid';
  if (/^(update_mask|updateMask)$/.test(name)) return 'mask';
  if (/^(page_token|pageToken)$/.test(name)) return 'page-token';
  if (type === 'integer' || type === 'number') return 'int';
  if (type === 'boolean') return 'bool';
  if (s.enum || s.items?.enum || /^(order_by|orderBy)$/.test(name)) return 'enum';
  if (s.format === 'date-time' || ['createdSince', 'from', 'to', 'scanner.dbBuildTime'].includes(name)) return 'time';
  if (s.pattern?.startsWith('^sha256') || name === 'digest') return 'digest';
  return 'string';
}

/** Valid values for string parameters by name (filters match these records, or at least are well-formed). */
function namedValue(name: string, rng: Rng, fx: Fixtures): string {
  switch (name) {
    case 'name':
      return enc(rng.pick(['fuzz-repo', 'fuzz team', 'viewer', 'nginx', 'v1.0']));
    case 'identity':
      return fx.identity;
    case 'role':
      return fx.role;
    case 'id':
    case 'uidp.ids':
      return rng.pick([fx.repo, fx.group, fx.identity, fx.role, fx.advisory]);
    case 'repoId':
      return fx.imageRepo;
    case 'issuer':
      return enc('https://issuer.example');
    case 'subject':
      return 'fuzz-subject';
    case 'tag':
      return '1.27';
    case 'repo':
      return 'nginx';
    case 'scanner.name':
      return 'GRYPE';
    case 'scanner.version':
      return '0.79.1';
    case 'artifactName':
    case 'artifactNames':
    case 'componentName':
    case 'componentNames':
      return rng.pick(['nginx', 'libxml2']);
    case 'query':
      return rng.pick(['req', 'a', '_', '%25']);
    case 'aud':
      return enc('http://127.0.0.1');
    default:
      return rng.pick(['fuzz', 'x', 'nginx']);
  }
}

/** What a query parameter's valid value depends on besides the random source and the fixtures. */
interface QueryContext {
  name: string;
  schema?: Schema;
  /** the fields an update mask may name */
  maskFields: string[];
}

/** A valid value for each kind of query parameter, percent-encoded. */
const validQueryValues: Record<QueryKind, (q: QueryContext, rng: Rng, fx: Fixtures) => string> = {
  int: ({ name }, rng) => (/size/i.test(name) ? rng.pick(['1', '10', '50', '200']) : rng.pick(['0', '1', '3'])),
  bool: (_, rng) => rng.pick(['true', 'false']),
  enum: ({ schema }, rng) => enc(rng.pick(schema?.enum ?? schema?.items?.enum ?? ['uid', 'uid desc'])),
  time: (_, rng) => enc(rng.pick(['2026-01-01T00:00:00Z', '2020-06-01T12:00:00.000Z'])),
  uid: ({ name }, rng, fx) =>
    name.startsWith('uidp.')
      ? rng.pick(name.includes('ncestors') ? [fx.subgroup, fx.repo] : [fx.org, fx.group, fx.subgroup])
      : namedValue(name, rng, fx),
  uids: ({ name }, rng, fx) => (rng.chance(0.5) ? namedValue(name, rng, fx) : `${fx.repo}%2C${fx.group}`),
  mask: ({ maskFields }, rng) => enc(maskFields.length > 0 && rng.chance(0.8) ? rng.pick(maskFields) : '*'),
  'page-token': () => '',
  digest: (_, _rng, fx) => enc(fx.digest),
  string: ({ name }, rng, fx) => namedValue(name, rng, fx),
};

function querySpec(name: string, s: Schema | undefined, required: boolean, maskFields: string[]): QuerySpec {
  const kind = queryKind(name, s);
  const names = name.includes('_') ? [name, camel(name)] : [name];
  const context: QueryContext = { name, schema: s, maskFields };
  return { names, kind, required, valid: (rng, fx) => validQueryValues[kind](context, rng, fx) };
}

/** Real uids for fields that reference other records, by field name. */
export function referenceFields(fx: Fixtures): Record<string, string> {
  return {
    roleUid: fx.role,
    identityUid: fx.identity,
    defaultRole: fx.role,
    orgUid: fx.org,
    code: fx.inviteCode,
    parentId: fx.org,
    identityId: fx.owner,
  };
}

let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

/** Hand-written valid bodies by schema (or operation) name, merged over the schema's own example. */
const baseBodies: Record<string, (rng: Rng, fx: Fixtures) => Record<string, unknown>> = {
  GroupInput: () => ({ name: unique('fuzz group') }),
  IdentityInput: () => ({ name: unique('fuzz identity') }),
  RoleInput: (rng) => ({
    name: unique('fuzz role'),
    capabilities: [rng.pick(['CAP_REPO_LIST', 'CAP_TAG_LIST', 'CAP_IAM_GROUPS_LIST'])],
  }),
  RoleBindingInput: (_, fx) => ({ identityUid: fx.identity, roleUid: fx.role }),
  IdentityProviderInput: (_, fx) => ({ name: unique('fuzz idp'), defaultRole: fx.role }),
  AccountAssociationInput: () => ({ name: unique('fuzz aa') }),
  GroupInviteInput: (_, fx) => ({ roleUid: fx.role, ttl: '3600s' }),
  ExternalGroupRoleMappingInput: (_, fx) => ({ externalGroupId: unique('group'), roleUid: fx.role }),
  SubscriptionInput: () => ({ sink: 'http://127.0.0.1:9/fuzz' }),
  RepoInput: () => ({ name: unique('fuzz-repo').replace(' ', '-') }),
  TagInput: (_, fx) => ({ name: unique('v').replace(' ', '.'), digest: fx.digest }),
  RepoReadmeUpdate: () => ({ content: '# fuzz' }),
  acceptTerms: () => ({ documentIds: ['platform-terms-of-service-2025-01'] }),
  acceptGroupInvite: (_, fx) => ({ code: fx.inviteCode }),
  AdvisoryInput: (rng) => advisoryBody(rng),
};

const sampleAdvisory = () =>
  JSON.parse(readFileSync(new URL('../../samples/advisories.json', import.meta.url), 'utf8'))[0] as Record<
    string,
    unknown
  >;

function advisoryBody(rng: Rng): Record<string, unknown> {
  const { parent: _p, createTime: _c, updateTime: _u, ...advisory } = sampleAdvisory();
  const part = () => Array.from({ length: 4 }, () => rng.pick([...'0123456789abcdefghijklmnopqrstuvwxyz'])).join('');
  return { ...advisory, advisoryId: `CGA-${part()}-${part()}-${part()}` };
}

function validBody(doc: OpenApiDocument, schema: Schema | undefined, name: string | undefined): BodySpec['valid'] {
  return (rng, fx) => {
    const example = schema ? exampleOf(rng, schema, '', referenceFields(fx)) : {};
    const base = name && baseBodies[name] ? baseBodies[name](rng, fx) : {};
    // An update starts from the schema's example alone (some fields); a create needs the hand-written base.
    return { ...(example as Record<string, unknown>), ...base };
  };
}

/** Which fixture a path parameter of a v2 path names. */
function v2PathFixture(model: ApiModel, method: string, template: string, param: string): PathParam['fixture'] {
  if (param === 'digest') return 'digest';
  if (param === 'repoUid') return 'imageRepo';
  if (param === 'group') return 'group';
  const [, domain, , ...rest] = template.split('/');
  const segment = rest.join('/').replace(/\/\{.*$/, '');
  const r = Object.values(model.resources).find((x) => x.domain === domain && x.path === segment);
  if (!r) throw new Error(`the fuzz test does not know what ${param} names in ${template}`);
  if (template.endsWith('/versions')) return 'artifact';
  // A create names its parent {uid}, as the reference's contract does.
  if (param === 'parent' || (method === 'post' && param === 'uid' && template.endsWith('/{uid}')))
    return fixtureOfCollection[r.parent ?? 'groups'] ?? 'group';
  return fixtureOfCollection[r.collection] ?? 'group';
}

/** Every path and method of the generated OpenAPI document. */
export function v2Operations(doc: OpenApiDocument, model: ApiModel): Operation[] {
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!httpMethods.includes(method)) continue;
      const { schema, name } = resolve(doc, op.requestBody?.content?.['application/json']?.schema);
      const bodyName =
        name ??
        (template.endsWith(':accept')
          ? 'acceptGroupInvite'
          : template.startsWith('/iam/v2/terms')
            ? 'acceptTerms'
            : undefined);
      const maskFields = Object.entries(schema?.properties ?? {})
        .filter(([, s]) => !s.readOnly)
        .map(([k]) => k);
      ops.push({
        id: `${method.toUpperCase()} ${template}`,
        api: 'v2',
        ...(op['x-unimplemented'] ? { notServed: true } : {}),
        method: method.toUpperCase(),
        template,
        params: (op.parameters ?? [])
          .filter((p) => p.in === 'path')
          .map((p) => ({ name: p.name, fixture: v2PathFixture(model, method, template, p.name) })),
        query: (op.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map((p) => querySpec(p.name, p.schema, !!p.required, maskFields)),
        body: op.requestBody
          ? { schema, required: !!op.requestBody.required, valid: validBody(doc, schema, bodyName) }
          : undefined,
      });
    }
  }
  return ops;
}

/** A v2 body in v1's spelling: top-level field renames and capability names, as the v1 block of the spec says. */
function toV1(r: ResourceModel, model: ApiModel, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const names = Object.fromEntries(Object.entries(r.v1!.fields).filter(([k]) => !k.includes('.')));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const renamed =
      k === 'capabilities' && Array.isArray(v) ? v.map((c) => model.capabilities[c as string]?.v1 ?? c) : v;
    out[names[k] ?? k] =
      k === 'events' && Array.isArray(v)
        ? v.map((e) => renameKeys(e, { createTime: 'timestamp', reviewState: 'status' }))
        : renamed;
  }
  return out;
}

function renameKeys(value: unknown, names: Record<string, string>): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [names[k] ?? k, v]));
}

function v1Schema(r: ResourceModel, s: Schema | undefined): Schema | undefined {
  if (!s?.properties) return s;
  const names = Object.fromEntries(Object.entries(r.v1!.fields).filter(([k]) => !k.includes('.')));
  return {
    ...s,
    properties: Object.fromEntries(Object.entries(s.properties).map(([k, p]) => [names[k] ?? k, p])),
    required: s.required?.map((k) => names[k] ?? k),
  };
}

/** The query parameters of a resource's v2 list, none required. */
function v2ListQuery(doc: OpenApiDocument, r: ResourceModel): QuerySpec[] {
  const list = doc.paths[`/${r.domain}/v2/${r.path}`]?.get;
  return (list?.parameters ?? []).filter((p) => p.in === 'query').map((p) => querySpec(p.name, p.schema, false, []));
}

type V1Route = (method: string, template: string, params: PathParam[], extra?: Partial<Operation>) => Operation;
const v1Route: V1Route = (method, template, params, extra = {}) => ({
  id: `${method} ${template}`,
  api: 'v1',
  method,
  template,
  params,
  query: [],
  ...extra,
});

/**
 * Every v1 route: the adapter's list, create, update (PUT) and delete for each resource with a v1 block
 * (handlers/v1.ts), and the routes of the v1 extensions (handlers/v1-*.ts).
 */
export function v1Operations(doc: OpenApiDocument, model: ApiModel): Operation[] {
  const adapter = Object.values(model.resources).flatMap((r) =>
    r.v1 ? v1ResourceOperations(doc, model, r, r.v1) : [],
  );
  return [...adapter, ...v1ExtensionOperations(doc, model)];
}

/** The adapter's routes for one resource (handlers/v1.ts). */
function v1ResourceOperations(doc: OpenApiDocument, model: ApiModel, r: ResourceModel, v1: V1Model): Operation[] {
  const ops: Operation[] = [];
  const base = `/${r.domain}/v1/${v1.collection}`;
  const kind = fixtureOfCollection[r.collection] ?? 'group';
  const input = doc.components?.schemas?.[`${r.type}Input`];
  const bodyName = baseBodies[`${r.type}Input`] ? `${r.type}Input` : undefined;
  const body: BodySpec = {
    schema: v1Schema(r, input),
    required: true,
    valid: (rng, fx) => toV1(r, model, validBody(doc, input, bodyName)(rng, fx)),
  };
  const has = (name: 'list' | 'create' | 'update' | 'delete') =>
    !!(r.operations[name] ?? (name === 'list' ? undefined : v1.operations[name]));
  if (has('list')) {
    const query = [
      ...v2ListQuery(doc, r),
      querySpec('id', { type: 'string' }, false, []),
      ...Object.keys(v1.params ?? {}).map((n) => querySpec(n, { type: 'string' }, false, [])),
    ];
    ops.push(v1Route('GET', base, [], { query }));
  }
  if (has('create')) ops.push(...v1CreateOperations(r, v1, base, input, body));
  if (has('update')) ops.push(v1Route('PUT', `${base}/{id}`, [{ name: 'id', fixture: kind }], { body }));
  if (has('delete')) ops.push(v1Route('DELETE', `${base}/{id}`, [{ name: 'id', fixture: kind }]));
  return ops;
}

/** A v1 create: one body wrapping the parent and the resource, or the resource posted under its parent, at the collection, or both. */
function v1CreateOperations(
  r: ResourceModel,
  v1: V1Model,
  base: string,
  input: Schema | undefined,
  body: BodySpec,
): Operation[] {
  const request = v1.createRequest;
  if (request) {
    return [
      v1Route('POST', base, [], {
        body: {
          schema: {
            type: 'object',
            properties: { [request.parent]: { type: 'string' }, [request.resource]: v1Schema(r, input) ?? {} },
            required: [request.parent, request.resource],
          },
          required: true,
          valid: (rng, fx) => ({ [request.parent]: fx.org, [request.resource]: body.valid(rng, fx) }),
        },
      }),
    ];
  }
  const ops: Operation[] = [];
  const parentKind = fixtureOfCollection[r.parent ?? 'groups'] ?? 'group';
  if (r.parent) ops.push(v1Route('POST', `${base}/{parent}`, [{ name: 'parent', fixture: parentKind }], { body }));
  if (!r.parent || r.parentOptional) ops.push(v1Route('POST', base, [], { body }));
  return ops;
}

/** The routes of handlers/v1-advisory-events.ts, v1-eol-tags.ts, v1-register.ts and v1-vuln-reports.ts. */
/** v1's advisory events: appended to an advisory, or replaced by id. */
function v1AdvisoryEventOperations(doc: OpenApiDocument): Operation[] {
  const eventSchema = doc.components?.schemas?.AdvisoryInput?.properties?.events?.items;
  const event = (): Record<string, unknown> => ({
    author: 'fuzz@example.dev',
    status: 'PENDING',
    fixed: { fixedVersion: '1.0', note: 'fuzz' },
  });
  const v1Event = {
    ...eventSchema,
    properties: Object.fromEntries(
      Object.entries(eventSchema?.properties ?? {}).map(([k, p]) => [
        k === 'createTime' ? 'timestamp' : k === 'reviewState' ? 'status' : k,
        p,
      ]),
    ),
  };
  return [
    {
      id: 'GET /vulnerabilities/v1/advisories/{id}/events',
      api: 'v1',
      method: 'GET',
      template: '/vulnerabilities/v1/advisories/{id}/events',
      params: [{ name: 'id', fixture: 'advisory' }],
      query: [],
    },
    {
      id: 'POST /vulnerabilities/v1/advisories/{id}/events',
      api: 'v1',
      method: 'POST',
      template: '/vulnerabilities/v1/advisories/{id}/events',
      params: [{ name: 'id', fixture: 'advisory' }],
      query: [],
      body: {
        schema: { type: 'object', properties: { advisoryEvent: v1Event }, required: ['advisoryEvent'] },
        required: true,
        valid: () => ({ advisoryEvent: event() }),
      },
    },
    {
      id: 'PUT /vulnerabilities/v1/advisory_events/{id}',
      api: 'v1',
      method: 'PUT',
      template: '/vulnerabilities/v1/advisory_events/{id}',
      params: [{ name: 'id', fixture: 'advisoryEvent' }],
      query: [],
      body: { schema: v1Event, required: true, valid: event },
    },
  ];
}

function v1ExtensionOperations(doc: OpenApiDocument, model: ApiModel): Operation[] {
  const q = (name: string, kind: Schema = { type: 'string' }, required = false) => querySpec(name, kind, required, []);
  return [
    ...v1AdvisoryEventOperations(doc),
    {
      id: 'GET /registry/v1/eoltags',
      api: 'v1',
      method: 'GET',
      template: '/registry/v1/eoltags',
      params: [],
      query: v2ListQuery(doc, model.resources.tags),
    },
    {
      id: 'POST /auth/v1/register',
      api: 'v1',
      method: 'POST',
      template: '/auth/v1/register',
      params: [],
      query: [],
      body: {
        schema: { type: 'object', properties: { code: { type: 'string' }, identityId: { type: 'string' } } },
        required: false,
        valid: (rng, fx) => rng.pick([{}, { code: fx.inviteCode }, { identityId: fx.owner }]),
      },
    },
    {
      id: 'GET /registry/v1/repos/{repo}/digests/{digest}/vulnreport',
      api: 'v1',
      method: 'GET',
      template: '/registry/v1/repos/{repo}/digests/{digest}/vulnreport',
      params: [
        { name: 'repo', fixture: 'imageRepo' },
        { name: 'digest', fixture: 'digest' },
      ],
      query: [],
    },
    {
      id: 'GET /registry/v1/vuln_reports',
      api: 'v1',
      method: 'GET',
      template: '/registry/v1/vuln_reports',
      params: [],
      query: [
        q('repoId', { type: 'string' }, true),
        q('digest'),
        q('tag'),
        q('scanner.name', { type: 'string', enum: ['UNKNOWN', 'GRYPE', 'TRIVY'] }),
        q('scanner.version'),
        q('scanner.dbBuildTime', { type: 'string', format: 'date-time' }),
        q('createdSince', { type: 'string', format: 'date-time' }),
      ],
    },
    {
      id: 'GET /registry/v1/vuln_reports/counts',
      api: 'v1',
      method: 'GET',
      template: '/registry/v1/vuln_reports/counts',
      params: [],
      query: [
        q('repo'),
        q('tag'),
        q('from', { type: 'string', format: 'date-time' }),
        q('to', { type: 'string', format: 'date-time' }),
      ],
    },
  ];
}

/** Served outside the generated routes: the documents. */
export function otherOperations(): Operation[] {
  const doc = (template: string): Operation => ({
    id: `GET ${template}`,
    api: 'other',
    method: 'GET',
    template,
    params: [],
    query: [],
  });
  // The token service's calls are in /openapi.json, so v2Operations has them.
  return [doc('/openapi.json'), doc('/.well-known/openid-configuration'), doc('/.well-known/jwks.json')];
}

const shapeOf = (method: string, template: string) => `${method} ${template.replace(/\{[^}]+\}/g, '{}')}`;

/** The operations of the reference contracts (v1 and v2) that the server does not serve. */
export function unservedOperations(referenceDocs: OpenApiDocument[], served: Operation[]): Operation[] {
  const servedShapes = new Set(served.map((o) => shapeOf(o.method, o.template)));
  const ops: Operation[] = [];
  for (const doc of referenceDocs) {
    for (const [template, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const m = method.toUpperCase();
        if (!httpMethods.includes(method) || servedShapes.has(shapeOf(m, template))) continue;
        servedShapes.add(shapeOf(m, template));
        const params = [...template.matchAll(/\{([^}]+)\}/g)].map((x) => ({ name: x[1], fixture: 'group' as const }));
        const { schema } = resolve(doc, op.requestBody?.content?.['application/json']?.schema);
        ops.push({
          id: `${m} ${template}`,
          api: 'unserved',
          method: m,
          template,
          params,
          query: (op.parameters ?? [])
            .filter((p) => p.in === 'query')
            .map((p) => querySpec(p.name, p.schema, false, [])),
          body: op.requestBody ? { schema, required: false, valid: () => ({}) } : undefined,
        });
      }
    }
  }
  return ops;
}
