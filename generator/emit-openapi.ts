// The OpenAPI 3.1 document of the model, validated with @readme/openapi-parser before it is written.
import { validate } from '@readme/openapi-parser';
import type { ApiModel, Capability, FieldModel, ResourceModel } from '../runtime/model.js';
import { batchItemName, filterField, standardFields } from '../runtime/model.js';
import { fieldSchema, objectSchema, type JsonSchema } from './json-schema.js';
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
      'page_size',
      { type: 'integer', minimum: 0 },
      'Page size, default 50, at most 200 (larger values are reduced to 200). Also pageSize.',
    ),
    q('page_token', { type: 'string' }, 'nextPageToken of the previous page. Also pageToken.'),
    q(
      'order_by',
      { type: 'string', enum: Object.keys(r.orderBy).flatMap((k) => [k, `${k} desc`]) },
      'Sort field, optionally followed by " desc". Also orderBy.',
    ),
    q('skip', { type: 'integer', minimum: 0 }, 'Rows to skip from where the request starts.'),
    q('uidp.descendants_of', { type: 'string' }, 'Everything below this uid. Also uidp.descendantsOf.'),
    q('uidp.children_of', { type: 'string' }, 'Direct children of this uid. Also uidp.childrenOf.'),
    q('uidp.ancestors_of', { type: 'string' }, 'Ancestors of this uid. Also uidp.ancestorsOf.'),
    q('uidp.in_root', { type: 'boolean' }, 'Only root records. Also uidp.inRoot.'),
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
  return objectSchema({ ...standardFields, ...r.fields, ...presented }, 'output', false);
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
    schemas[`${r.type}Input`] = objectSchema(r.fields, 'input', true);
    schemas[`${r.type}Update`] = objectSchema(r.fields, 'input', false);
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
  default: errorResponse,
});
const body = (schema: JsonSchema) => ({ required: true, content: { 'application/json': { schema } } });

/** Fills in what one route's operation says (id, parameters, bodies, answers) and returns the capability it needs. */
function describeRoute(route: Route, op: JsonSchema, pathParams: JsonSchema[]): Capability {
  const r = route.resource;
  switch (route.kind) {
    case 'list':
      op.operationId = `list${cap(r!.collection)}`;
      op.parameters = [...pathParams, ...listParameters(r!)];
      op.responses = ok(ref(`List${r!.type}Response`));
      return r!.operations.list!.capability;
    case 'get':
      op.operationId = `get${r!.type}`;
      op.responses = ok(ref(r!.type));
      return r!.operations.get!.capability;
    case 'create':
      op.operationId = route.params.length ? `create${r!.type}` : `create${r!.type}AtRoot`;
      op.requestBody = body(ref(`${r!.type}Input`));
      op.responses = ok(ref(r!.type));
      return r!.operations.create!.capability;
    case 'batchCreate':
      op.operationId = `batchCreate${cap(r!.collection)}`;
      op.description = `Creates up to ${r!.batchCreate!.max} ${r!.collection} under one parent in one transaction: all of them, or, when one is refused, none. Each is checked as a create is. Answers them in the order of the requests.`;
      op.requestBody = body(batchCreateSchema(r!));
      op.responses = ok({
        type: 'object',
        required: [r!.collection],
        properties: { [r!.collection]: { type: 'array', items: ref(r!.type) } },
      });
      return r!.operations.create!.capability;
    case 'batchDelete':
      op.operationId = `batchDelete${cap(r!.collection)}`;
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
      op.operationId = `update${r!.type}`;
      op.parameters = [
        {
          name: 'update_mask',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'Comma-separated field paths, or * for full replacement. Also updateMask.',
        },
      ];
      op.requestBody = body(ref(`${r!.type}Update`));
      op.responses = ok(ref(r!.type));
      return r!.operations.update!.capability;
    case 'delete':
      op.operationId = `delete${r!.type}`;
      op.responses = ok(ref('Empty'));
      return r!.operations.delete!.capability;
    case 'subresourceGet':
    case 'subresourceUpdate': {
      const s = r!.subresources.find((x) => x.name === route.subresource)!;
      const isGet = route.kind === 'subresourceGet';
      op.operationId = `${isGet ? 'get' : 'update'}${s.type}`;
      if (!isGet) op.requestBody = body(ref(`${s.type}Update`));
      op.responses = ok(ref(s.type));
      return isGet ? s.get.capability : s.update!.capability;
    }
    case 'endpoint': {
      const e = route.endpoint!;
      op.operationId = e.name;
      op.parameters = Object.entries(e.query).map(([name, f]) => ({
        name,
        in: 'query',
        required: !!f.required,
        schema: fieldSchema(f as FieldModel, 'output'),
      }));
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

export async function buildOpenApi(model: ApiModel, routes: Route[]): Promise<JsonSchema> {
  const schemas = componentSchemas(model);
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of v2Routes(routes)) {
    const op: JsonSchema = { responses: { default: errorResponse } };
    const pathParams = route.params.map((name) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
      description:
        name === 'uid' || name === 'parent' || name.endsWith('Uid')
          ? 'A uid; its "/" may be sent unescaped or as %2F'
          : undefined,
    }));
    const capability = describeRoute(route, op, pathParams);
    op.parameters = [
      ...pathParams,
      ...((op.parameters as JsonSchema[] | undefined) ?? []).filter((p) => p.in !== 'path'),
    ];
    op.tags = [route.resource?.domain ?? route.endpoint!.domain];
    // What the route says of itself (a batch's rules, a call not served) comes before who may call it.
    op.description = [op.description, capabilityNote(capability)].filter(Boolean).join(' ');
    if (capability !== 'none') op.security = [{ bearer: [] }];
    (paths[route.path] ??= {})[route.method.toLowerCase()] = op;
  }

  const doc: JsonSchema = {
    openapi: '3.1.0',
    info: {
      title: model.title,
      version: model.version,
      description: 'Generated from spec/ by npm run generate. Do not edit.',
    },
    tags: model.domains.map((d) => ({ name: d })),
    paths,
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  };
  const result = await validate(structuredClone(doc) as never);
  if (!result.valid) {
    throw new Error(`the generated OpenAPI document is invalid:\n${JSON.stringify(result.errors, null, 2)}`);
  }
  return doc;
}

export function cap(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}
