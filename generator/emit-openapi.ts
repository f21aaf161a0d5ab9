// The OpenAPI 3.1 document of the model, validated with @readme/openapi-parser before it is written.
import { validate } from '@readme/openapi-parser';
import type { ApiModel, Capability, FieldModel, ResourceModel } from '../runtime/model/api-model.js';
import { batchItemName, filterField, standardFields } from '../runtime/model/api-model.js';
import { fieldSchema, objectSchema, type JsonSchema } from './json-schema.js';
import { lowerCamelCase, snakeCase } from '../runtime/model/field-names.js';
import { contractNamer } from './contract-names.js';
import type { ProtoSurface } from './proto-model.js';
import { v2Routes, type Route } from './routes-table.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = { description: 'An AIP-193 error', content: { 'application/json': { schema: ref('Status') } } };

function listParameters(r: ResourceModel): JsonSchema[] {
  const q = (name: string, schema: JsonSchema, description: string) => ({
    name,
    in: 'query',
    required: false,
    schema,
    description,
  });
  const params = [
    q(
      'pageSize',
      { type: 'integer', minimum: 0 },
      'Page size, default 50, at most 200 (larger values are reduced to 200). Also page_size.',
    ),
    q('pageToken', { type: 'string' }, 'nextPageToken of the previous page. Also page_token.'),
    q(
      'orderBy',
      { type: 'string', enum: Object.keys(r.orderBy).flatMap((k) => [k, `${k} desc`]) },
      'Sort field, optionally followed by " desc". Also order_by.',
    ),
    q('skip', { type: 'integer', minimum: 0 }, 'Rows to skip from where the request starts.'),
    q('uidp.descendantsOf', { type: 'string' }, 'Everything below this uid. Also uidp.descendants_of.'),
    q('uidp.childrenOf', { type: 'string' }, 'Direct children of this uid. Also uidp.children_of.'),
    q('uidp.ancestorsOf', { type: 'string' }, 'Ancestors of this uid. Also uidp.ancestors_of.'),
    q('uidp.inRoot', { type: 'boolean' }, 'Only root records. Also uidp.in_root.'),
    q('uidp.ids', { type: 'array', items: { type: 'string' } }, 'Exactly these uids.'),
  ];
  for (const f of r.filters) {
    const schema = fieldSchema(filterField(r, f), 'output');
    const description =
      f.match === 'set'
        ? `which field is set: ${Object.entries(f.fields!)
            .map(([v, field]) => `${v}: ${field ?? 'any'}`)
            .join(', ')}`
        : `${f.match} filter on ${f.field}`;
    params.push(q(f.param, f.match === 'anyOf' ? { type: 'array', items: schema } : schema, description));
  }
  return params;
}

function capabilityNote(c: Capability): string {
  if (c === 'none') return 'No authentication.';
  return c === 'authenticated' ? 'Needs a token, no capability.' : `Needs ${c.join(' and ')}.`;
}

function resourceSchema(r: ResourceModel): JsonSchema {
  const presented = Object.fromEntries(
    Object.entries(r.presents ?? {}).map(([k, f]) => [k, { ...f, outputOnly: true }]),
  );
  const timestamps = r.timestamps ?? ['createTime', 'updateTime'];
  const standard = Object.fromEntries(
    Object.entries(standardFields).filter(([name]) => name === 'uid' || timestamps.includes(name as never)),
  );
  const schema = objectSchema({ ...standard, ...r.fields, ...presented }, 'output', false);
  // What every answer carries: the uid, the times it shows, and the fields a create must give.
  const always = Object.keys(standard).concat(
    Object.entries(r.fields)
      .filter(([, f]) => f.required && !f.inputOnly)
      .map(([name]) => name),
  );
  return { ...schema, required: always };
}

/**
 * A request body as the document shows it: the validator's schema, with the output-only fields a read-modify-write
 * client echoes back (accepted and ignored) shown typed and readOnly, as the reference's contract shows them.
 */
function documentedInput(r: ResourceModel, requireFields: boolean): JsonSchema {
  const s = objectSchema(r.fields, 'input', requireFields);
  const output = resourceSchema(r).properties as Record<string, JsonSchema>;
  const properties = s.properties as Record<string, JsonSchema>;
  // An update names its record in the path: its body carries no uid, as the reference's does not.
  for (const [name, schema] of Object.entries(output))
    if (schema.readOnly && !(name === 'uid' && !requireFields)) properties[name] = schema;
  return s;
}

/** The component schemas: every resource's forms, its list answer, sub-resources and endpoint answers. */
function componentSchemas(model: ApiModel): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {
    Any: {
      type: 'object',
      properties: { '@type': { type: 'string' } },
      required: ['@type'],
      additionalProperties: true,
    },
    Status: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'integer' },
        message: { type: 'string' },
        details: { type: 'array', items: ref('Any') },
      },
    },
    Empty: { type: 'object', additionalProperties: false },
  };
  for (const r of Object.values(model.resources)) {
    schemas[r.type] = resourceSchema(r);
    schemas[`${r.type}Input`] = documentedInput(r, true);
    schemas[`${r.type}Update`] = documentedInput(r, false);
    schemas[`List${r.type}Response`] = {
      type: 'object',
      properties: {
        [r.collection]: { type: 'array', items: ref(r.type) },
        nextPageToken: { type: 'string' },
        totalCount: { type: 'string', format: 'int64' },
        skipped: { type: 'integer' },
      },
      required: [r.collection, 'totalCount', 'skipped'],
    };
    for (const s of r.subresources) {
      schemas[s.type] = objectSchema({ uid: standardFields.uid, ...s.fields }, 'output', false);
      schemas[`${s.type}Update`] = objectSchema(s.fields, 'input', false);
    }
  }
  for (const e of model.endpoints.filter((x) => !x.version))
    schemas[`${cap(e.name)}Response`] = objectSchema(e.response, 'output', false);

  return schemas;
}

/** { parent, requests: [{ parent?, <item> }], <shared fields>? }, as the reference's batch requests are. */
function batchCreateSchema(r: ResourceModel): JsonSchema {
  const { max, shared } = r.batchCreate!;
  return {
    type: 'object',
    required: ['parent', 'requests'],
    properties: {
      parent: { type: 'string', description: 'the parent of every record made' },
      requests: {
        type: 'array',
        minItems: 1,
        maxItems: max,
        items: {
          type: 'object',
          required: [batchItemName(r)],
          properties: {
            parent: { type: 'string', description: 'the same parent, or left out' },
            [batchItemName(r)]: ref(`${r.type}Input`),
          },
        },
      },
      ...Object.fromEntries(
        shared.map((name) => [
          name,
          { ...fieldSchema(r.fields[name], 'input'), description: `for every request that leaves it out` },
        ]),
      ),
    },
  };
}

const ok = (schema: JsonSchema) => ({
  200: { description: 'OK', content: { 'application/json': { schema } } },
  '4XX': { ...errorResponse, description: 'The request was refused: an AIP-193 error saying why' },
  default: errorResponse,
});

/** What a path parameter holds, for the reader of the document. */
function paramDescription(route: Route, name: string): string | undefined {
  if (route.kind === 'create' && name === 'parent')
    return 'The uid of the parent (a group) to create in; its "/" may be sent unescaped or as %2F';
  return name === 'uid' || name === 'parent' || name.endsWith('Uid')
    ? 'A uid; its "/" may be sent unescaped or as %2F'
    : undefined;
}
const body = (schema: JsonSchema) => ({ required: true, content: { 'application/json': { schema } } });

/** Fills in what one route's operation says (id, parameters, bodies, answers) and returns the capability it needs. */
function describeRoute(route: Route, op: JsonSchema, pathParams: JsonSchema[]): Capability {
  const r = route.resource;
  switch (route.kind) {
    case 'list':
      op.parameters = [...pathParams, ...listParameters(r!)];
      op.responses = ok(ref(`List${r!.type}Response`));
      return r!.operations.list!.capability;
    case 'get':
      op.responses = ok(ref(r!.type));
      return r!.operations.get!.capability;
    case 'create':
      op.requestBody = body(ref(`${r!.type}Input`));
      op.responses = ok(ref(r!.type));
      return r!.operations.create!.capability;
    case 'batchCreate':
      op.description = `Creates up to ${r!.batchCreate!.max} ${r!.collection} under one parent in one transaction: all of them, or, when one is refused, none. Each is checked as a create is. Answers them in the order of the requests.`;
      op.requestBody = body(batchCreateSchema(r!));
      op.responses = ok({
        type: 'object',
        required: [r!.collection],
        properties: { [r!.collection]: { type: 'array', items: ref(r!.type) } },
      });
      return r!.operations.create!.capability;
    case 'batchDelete':
      op.description = `Deletes up to ${r!.batchDelete!.max} ${r!.collection} of one parent in one transaction: all of them, or, when one is refused, none. A uid already gone is skipped; a uid of another parent is INVALID_ARGUMENT. Answers the records deleted.`;
      op.requestBody = body({
        type: 'object',
        required: ['parent', 'names'],
        properties: {
          parent: { type: 'string', description: 'the parent of every record named' },
          names: { type: 'array', minItems: 1, maxItems: r!.batchDelete!.max, items: { type: 'string' } },
        },
      });
      op.responses = ok({
        type: 'object',
        required: [r!.collection, 'parent'],
        properties: { [r!.collection]: { type: 'array', items: ref(r!.type) }, parent: { type: 'string' } },
      });
      return r!.operations.delete!.capability;
    case 'update':
      op.parameters = [
        {
          name: 'updateMask',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'Comma-separated field paths, or * for full replacement. Also update_mask.',
        },
      ];
      op.requestBody = body(ref(`${r!.type}Update`));
      op.responses = ok(ref(r!.type));
      return r!.operations.update!.capability;
    case 'delete':
      op.responses = ok(ref('Empty'));
      return r!.operations.delete!.capability;
    case 'subresourceGet':
    case 'subresourceUpdate': {
      const s = r!.subresources.find((x) => x.name === route.subresource)!;
      const isGet = route.kind === 'subresourceGet';
      if (!isGet) op.requestBody = body(ref(`${s.type}Update`));
      op.responses = ok(ref(s.type));
      return isGet ? s.get.capability : s.update!.capability;
    }
    case 'endpoint': {
      const e = route.endpoint!;
      // A parameter declared in both spellings (page_size, pageSize) is documented once, in the camelCase one.
      const twin = (name: string) => (name.includes('_') ? lowerCamelCase(name) : undefined);
      op.parameters = Object.entries(e.query)
        .filter(([name]) => !(twin(name) && twin(name)! in e.query))
        .map(([name, f]) => {
          const snake = snakeCase(name);
          return {
            name,
            in: 'query',
            required: !!f.required,
            schema: fieldSchema(f as FieldModel, 'output'),
            ...(snake !== name && snake in e.query ? { description: `Also ${snake}.` } : {}),
          };
        });
      if (e.body) op.requestBody = body(objectSchema(e.body, 'input', true));
      op.responses = ok(ref(`${cap(e.name)}Response`));
      if (e.unimplemented) {
        op.description = `Not served by this server: answers UNIMPLEMENTED (501): ${e.unimplemented}.`;
        op['x-unimplemented'] = e.unimplemented;
      }
      return e.capability;
    }
  }
}

export async function buildOpenApi(model: ApiModel, routes: Route[], surface: ProtoSurface): Promise<JsonSchema> {
  const schemas = componentSchemas(model);
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const namesOf = contractNamer(model, surface);
  for (const route of v2Routes(routes)) {
    const names = namesOf(route);
    const op: JsonSchema = { operationId: names.operationId, summary: names.summary, responses: {} };
    const pathParams = route.params.map((name) => ({
      name: names.params[name] ?? name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
      description: paramDescription(route, name),
    }));
    const capability = describeRoute(route, op, pathParams);
    op.parameters = [
      ...pathParams,
      ...((op.parameters as JsonSchema[] | undefined) ?? []).filter((p) => p.in !== 'path'),
    ];
    op.tags = [route.resource?.domain ?? route.endpoint!.domain];
    // What the route says of itself (a batch's rules, a call not served) comes before who may call it.
    op.description = [op.description, capabilityNote(capability)].filter(Boolean).join(' ');
    op.security = capability === 'none' ? [] : [{ bearer: [] }];
    (paths[names.path] ??= {})[route.method.toLowerCase()] = op;
  }

  if (model.tokenExchange !== false) Object.assign(paths, tokenServicePaths());
  const { release, description, ...info } = model.info;
  const doc: JsonSchema = {
    // The file's do-not-edit mark, first as in every generated file, and not in what a consumer reads (info).
    'x-generated': 'by npm run generate from spec/. Do not edit: changes are lost on the next run.',
    openapi: '3.1.0',
    info: {
      title: model.title,
      version: release,
      ...(description ? { description } : {}),
      ...info,
    },
    // The server that serves the document puts its own URL here (runtime/http/app.ts).
    servers: [{ url: 'http://127.0.0.1:8080', description: 'npm start, as it starts by default' }],
    tags: [
      ...model.domains.map((d) => ({ name: d, description: `${model.domainTitles[d]}: /${d}/${model.version}/` })),
      ...(model.tokenExchange === false
        ? []
        : [{ name: 'sts', description: "The token service: exchanges another issuer's token for one of this server" }]),
    ],
    paths,
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  };
  keepReachedSchemas(doc);
  const result = await validate(structuredClone(doc) as never);
  if (!result.valid) {
    throw new Error(`the generated OpenAPI document is invalid:\n${JSON.stringify(result.errors, null, 2)}`);
  }
  return doc;
}

/** Drops the component schemas no operation reaches (a read-only resource's input forms, say). */
function keepReachedSchemas(doc: JsonSchema): void {
  const schemas = (doc.components as { schemas: Record<string, JsonSchema> }).schemas;
  const reached = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const target = (node as { $ref?: unknown }).$ref;
      if (typeof target === 'string') {
        const name = target.replace('#/components/schemas/', '');
        if (!reached.has(name)) {
          reached.add(name);
          walk(schemas[name]);
        }
      }
      Object.values(node).forEach(walk);
    }
  };
  walk(doc.paths);
  for (const name of Object.keys(schemas)) if (!reached.has(name)) delete schemas[name];
}

/**
 * The token service's calls (framework/handlers/sts.ts), served beside the generated routes: the exchange, refresh, and
 * the headless sessions the reference has, which need what this server does not run.
 */
function tokenServicePaths(): Record<string, Record<string, JsonSchema>> {
  const exchanged = {
    type: 'object',
    required: ['token', 'expiry'],
    properties: {
      token: { type: 'string', description: 'a token of this server for the identity' },
      expiry: { type: 'string', format: 'date-time' },
      refreshToken: {
        type: 'string',
        description:
          'a refresh token, for POST /sts/exchange_refresh_token: single use, rotated on use, ended with its identity or a change of its claimMatch (absent when REFRESH_TOKEN_SECONDS is 0)',
      },
    },
  };
  const pair = {
    type: 'object',
    required: ['token', 'refreshToken'],
    properties: {
      token: {
        type: 'object',
        required: ['token', 'expiry'],
        properties: { token: exchanged.properties.token, expiry: exchanged.properties.expiry },
      },
      refreshToken: {
        type: 'object',
        required: ['token', 'expiry'],
        description: 'the next refresh token of the family (the one presented is spent); expiry: when the family ends',
        properties: { token: { type: 'string' }, expiry: { type: 'string', format: 'date-time' } },
      },
    },
  };
  const exchange = (operationId: string) => ({
    operationId,
    summary: 'Exchange',
    description:
      'Exchanges an OIDC token of another issuer, sent as the bearer token, for a token of this server for an identity whose claimMatch it satisfies (docs/access-control.md, "Token exchange").',
    tags: ['sts'],
    security: [{ bearer: [] }],
    parameters: [
      {
        name: 'identity',
        in: 'query',
        required: true,
        schema: { type: 'string' },
        description: 'the uid of the identity to assume',
      },
      {
        name: 'aud',
        in: 'query',
        required: false,
        schema: { type: 'string' },
        description: 'the audience of the token made',
      },
    ],
    responses: ok(exchanged),
  });
  const notServed = (operationId: string, summary: string, why: string) => ({
    operationId,
    summary,
    description: `Not served by this server: answers UNIMPLEMENTED (501): ${why}.`,
    'x-unimplemented': why,
    tags: ['sts'],
    security: [],
    responses: ok(ref('Empty')),
  });
  return {
    '/sts/exchange': {
      get: exchange('SecurityTokenService_Exchange2'),
      post: exchange('SecurityTokenService_Exchange'),
    },
    '/sts/exchange_refresh_token': {
      post: {
        operationId: 'SecurityTokenService_ExchangeRefreshToken',
        summary: 'Exchange Refresh Token',
        description:
          'Exchanges a refresh token of this server (from /sts/exchange or an earlier refresh), sent as the bearer token, for a token of its identity and the next refresh token. A refresh token is single use: presented again, it ends every refresh token of its exchange.',
        tags: ['sts'],
        security: [{ bearer: [] }],
        parameters: [
          {
            name: 'aud',
            in: 'query',
            required: false,
            schema: { type: 'string' },
            description: 'the audience of the token made (by default the one of the exchange)',
          },
        ],
        responses: ok(pair),
      },
    },
    '/sts/headless_sessions': {
      get: notServed(
        'Auth_GetHeadlessSession',
        'Get Headless Session',
        'headless sessions need a browser login, which this server does not run',
      ),
    },
  };
}

export function cap(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}
