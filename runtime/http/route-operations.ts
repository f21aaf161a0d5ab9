// The v2 HTTP adapter: reads an HTTP request into a Call, runs it through the one pipeline
// (runtime/pipeline/operations.ts) and writes the JSON answer. It translates only: the pipeline authorizes and
// validates.
import { jsonType, type HttpContext, type Middleware } from './context.js';
import { invalidArgument } from '../model/errors.js';
import { updateMaskParameters } from '../model/field-mask.js';
import { isUidPath } from '../model/uid.js';
import type { Principal } from '../access/authorization.js';
import type { EndpointModel, ResourceModel } from '../model/api-model.js';
import type { Call, EndpointHandler, Operations, Present, Prepare } from '../pipeline/operations.js';
import type { Row } from '../model/records.js';
import { checkParameterNames } from '../pipeline/validation.js';

export type { HandlerContext, Present, Prepare } from '../pipeline/operations.js';

export interface RouteOperations {
  list(r: ResourceModel, params: string[], present?: Present): Middleware;
  get(r: ResourceModel, params: string[], present?: Present): Middleware;
  create(r: ResourceModel, params: string[], present?: Present, prepare?: Prepare): Middleware;
  batchCreate(r: ResourceModel, params: string[], present?: Present, prepare?: Prepare): Middleware;
  batchDelete(r: ResourceModel, params: string[], present?: Present): Middleware;
  update(r: ResourceModel, params: string[], present?: Present): Middleware;
  delete(r: ResourceModel, params: string[]): Middleware;
  subresourceGet(r: ResourceModel, name: string): Middleware;
  subresourceUpdate(r: ResourceModel, name: string): Middleware;
  endpoint(e: EndpointModel, params: string[], call: EndpointHandler): Middleware;
  /** Before a route whose query no generated validator checks: a parameter it does not take is refused by name. */
  queryParameters(takes: string[]): Middleware;
}

const uidParams = new Set(['uid', 'parent', 'id']);

/** Path parameters from the route's captures; a uid may arrive with its "/" escaped as %2F. */
export function pathParams(ctx: HttpContext, names: string[]): Record<string, string> {
  const captures = ctx.captures;
  const out: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const raw = captures[i] ?? '';
    try {
      out[name] = raw.includes('%') ? decodeURIComponent(raw) : raw;
    } catch {
      throw invalidArgument([{ field: name, description: `${name} is not correctly percent-encoded` }]);
    }
  }
  return checkUidParams(out);
}

/** A malformed uid is refused before authorization: it names nothing, so refusing it reveals nothing. */
export function checkUidParams(params: Record<string, string>): Record<string, string> {
  for (const name in params) {
    const value = params[name];
    if (uidParams.has(name) && !isUidPath(value))
      throw invalidArgument([
        { field: name, description: `"${value}" is not a uid (40 hex characters, then /16 hex per level)` },
      ]);
  }
  return params;
}

/** The JSON object body ({} when there is none). */
export function requestBody(ctx: HttpContext): Row {
  const b = ctx.requestBody;
  if (b === undefined) return {};
  if (typeof b !== 'object' || b === null || Array.isArray(b))
    throw invalidArgument([{ field: '(body)', description: 'the body must be a JSON object' }]);
  return b as Row;
}

/** The request as the pipeline takes it; `names` are the route's path parameters, in order. */
export function callOf(ctx: HttpContext, names: string[], body?: Row): Call {
  const query = { ...ctx.query };
  let q: string | string[] | undefined;
  for (const name of updateMaskParameters) q ??= query[name];
  return {
    principal: ctx.state.principal as Principal,
    params: pathParams(ctx, names),
    query,
    body: body ?? requestBody(ctx),
    mask: Array.isArray(q) ? q.join(',') : q,
  };
}

export function createRouteOperations(operations: Operations): RouteOperations {
  return {
    list: (r, names, present) =>
      present
        ? async (ctx) => {
            const page = await operations.list(r, callOf(ctx, names), { present });
            ctx.body = {
              [r.collection]: page.items,
              nextPageToken: page.nextPageToken,
              totalCount: page.totalCount,
              skipped: page.skipped,
            };
          }
        : async (ctx) => {
            const page = await operations.listJson(r, callOf(ctx, names));
            // The members the object above would have, in its order, around answers already JSON.
            ctx.body =
              `{${JSON.stringify(r.collection)}:[${page.items.join(',')}],` +
              `"nextPageToken":${JSON.stringify(page.nextPageToken)},"totalCount":${JSON.stringify(page.totalCount)},` +
              `"skipped":${JSON.stringify(page.skipped)}}`;
            ctx.type = jsonType;
          },
    get: (r, names, present) =>
      present
        ? async (ctx) => {
            ctx.body = await operations.get(r, callOf(ctx, names), present);
          }
        : (ctx) => {
            const answer = (text: string) => {
              ctx.body = text;
              ctx.type = jsonType;
            };
            const text = operations.getJson(r, callOf(ctx, names));
            return typeof text === 'string' ? answer(text) : text.then(answer);
          },
    create: (r, names, present, prepare) => async (ctx) => {
      ctx.body = await operations.create(r, callOf(ctx, names), { present, prepare });
    },
    batchCreate: (r, names, present, prepare) => async (ctx) => {
      ctx.body = { [r.collection]: await operations.batchCreate(r, callOf(ctx, names), { present, prepare }) };
    },
    batchDelete: (r, names, present) => async (ctx) => {
      const call = callOf(ctx, names);
      ctx.body = { [r.collection]: await operations.batchDelete(r, call, present), parent: call.body.parent };
    },
    update: (r, names, present) => async (ctx) => {
      ctx.body = await operations.update(r, callOf(ctx, names), present);
    },
    delete: (r, names) => async (ctx) => {
      await operations.delete(r, callOf(ctx, names));
      ctx.body = {};
    },
    subresourceGet: (r, name) => async (ctx) => {
      ctx.body = await operations.getSubresource(r, name, callOf(ctx, ['uid']));
    },
    subresourceUpdate: (r, name) => async (ctx) => {
      ctx.body = await operations.updateSubresource(r, name, callOf(ctx, ['uid']));
    },
    endpoint: (e, names, handler) => async (ctx) => {
      ctx.body = await operations.endpoint(e, callOf(ctx, names, e.body ? undefined : {}), handler);
    },
    queryParameters: (takes) => (ctx, next) => {
      checkParameterNames(ctx.query, takes);
      return next();
    },
  };
}
