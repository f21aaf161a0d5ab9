// Koa middleware for each kind of route: read the request, validate, authorize, run the shared operation.
import type { Context, Middleware } from 'koa';
import { invalidArgument } from './errors.js';
import { updateMaskParameters } from './field-mask.js';
import { isUidPath } from './uid.js';
import { capabilityScope, type Policy, type Principal } from './authorization.js';
import { parseListRequest } from './list-request.js';
import type { ApiModel, EndpointModel, ResourceModel } from './model.js';
import type { Resources } from './resources.js';
import type { Row } from './records.js';
import type { Store } from './store.js';
import { check, checkParameterNames, type Validators } from './validation.js';

/** What a hand-written handler may use. */
export interface HandlerContext {
  principal: Principal;
  store: Store;
  resources: Resources;
  model: ApiModel;
}

/** A hand-written presenter: shapes records for responses. */
export type Present = (records: Row[], context: HandlerContext) => Promise<Row[]>;

/** A hand-written create step: completes the record to store; reveal adds fields to the create response only. */
export type Prepare = (record: Row, context: HandlerContext) => Promise<{ record: Row; reveal?: Row }>;

export interface RouteOperations {
  list(r: ResourceModel, params: string[], present?: Present): Middleware;
  get(r: ResourceModel, params: string[], present?: Present): Middleware;
  create(r: ResourceModel, params: string[], present?: Present, prepare?: Prepare): Middleware;
  update(r: ResourceModel, params: string[], present?: Present): Middleware;
  delete(r: ResourceModel, params: string[]): Middleware;
  subresourceGet(r: ResourceModel, name: string): Middleware;
  subresourceUpdate(r: ResourceModel, name: string): Middleware;
  endpoint(e: EndpointModel, params: string[], call: (request: Record<string, unknown>, context: HandlerContext) => Promise<unknown>): Middleware;
  /** Before a route whose query no generated validator checks: a parameter it does not take is refused by name. */
  queryParameters(takes: string[]): Middleware;
}

const uidParams = new Set(['uid', 'parent', 'id']);

/** Path parameters from the route's captures; a uid may arrive with its "/" escaped as %2F. */
export function pathParams(ctx: Context, names: string[]): Record<string, string> {
  const captures = (ctx as Context & { captures?: string[] }).captures ?? [];
  const out: Record<string, string> = {};
  names.forEach((name, i) => {
    try {
      out[name] = decodeURIComponent(captures[i] ?? '');
    } catch {
      throw invalidArgument([{ field: name, description: `${name} is not correctly percent-encoded` }]);
    }
    // A malformed uid is refused before authorization: it names nothing, so refusing it reveals nothing.
    if (uidParams.has(name) && !isUidPath(out[name])) {
      throw invalidArgument([{ field: name, description: `"${out[name]}" is not a uid (40 hex characters, then /16 hex per level)` }]);
    }
  });
  return out;
}

/** The query string as a plain object; repeated parameters become arrays. */
function queryObject(ctx: Context): Record<string, unknown> {
  return { ...ctx.query };
}

/** The JSON object body ({} when there is none). */
export function body(ctx: Context): Row {
  const b = (ctx.request as { body?: unknown }).body;
  if (b === undefined) return {};
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw invalidArgument([{ field: '(body)', description: 'the body must be a JSON object' }]);
  return b as Row;
}

function updateMask(ctx: Context): string | undefined {
  const q = updateMaskParameters.map((name) => ctx.query[name]).find((v) => v !== undefined);
  return Array.isArray(q) ? q.join(',') : q;
}

export function createRouteOperations(deps: { model: ApiModel; store: Store; resources: Resources; validators: Validators; policy: Policy }): RouteOperations {
  const { resources, validators, policy } = deps;
  const principal = (ctx: Context): Principal => ctx.state.principal as Principal;
  const validate = (kind: 'body' | 'query', id: string, data: unknown) => {
    const v = validators[kind](id);
    if (!v) throw new Error(`no generated validator ${id}: run npm run generate`);
    check(v, data);
  };
  const capability = (r: ResourceModel, op: keyof ResourceModel['operations']) => r.operations[op]!.capability;
  const scopeOf = (r: ResourceModel, uid: string | undefined) => capabilityScope(deps.model, r, uid);

  const handlerContext = (ctx: Context): HandlerContext => ({ principal: principal(ctx), store: deps.store, resources, model: deps.model });
  const one = async (ctx: Context, record: Row, present?: Present) => (present ? (await present([record], handlerContext(ctx)))[0] : record);

  return {
    list: (r, names, present) => async (ctx) => {
      const params = pathParams(ctx, names);
      const query = queryObject(ctx);
      validate('query', `${r.collection}.list`, query);
      const req = parseListRequest(query, r);
      const visible = await policy.visibility(principal(ctx), capability(r, 'list'), r, req.hierarchy.descendantsOf ?? req.hierarchy.childrenOf);
      if (!visible) {
        ctx.body = { [r.collection]: [], nextPageToken: '', totalCount: '0', skipped: req.skip };
        return;
      }
      const result = await resources.list(r, req, [...visible, ...(params.parent !== undefined ? [{ parentUid: params.parent }] : [])]);
      const items = present ? await present(result.items, handlerContext(ctx)) : result.items;
      ctx.body = { [r.collection]: items, nextPageToken: result.nextPageToken, totalCount: result.totalCount, skipped: result.skipped };
    },
    get: (r, names, present) => async (ctx) => {
      const { uid } = pathParams(ctx, names);
      await policy.requireCapability(principal(ctx), capability(r, 'get'), scopeOf(r, uid));
      ctx.body = await one(ctx, await resources.get(r, uid), present);
    },
    create: (r, names, present, prepare) => async (ctx) => {
      const { parent } = pathParams(ctx, names);
      const data = body(ctx);
      await policy.requireCapability(principal(ctx), capability(r, 'create'), scopeOf(r, parent));
      validate('body', `${r.collection}.create`, data);
      const complete = prepare && ((record: Row) => prepare(record, handlerContext(ctx)));
      const created = await resources.create(r, parent, data, { actor: principal(ctx).subject, prepare: complete, guard: policy.noEscalation(principal(ctx), r) });
      ctx.body = await one(ctx, created, present);
    },
    update: (r, names, present) => async (ctx) => {
      const { uid } = pathParams(ctx, names);
      const data = body(ctx);
      await policy.requireCapability(principal(ctx), capability(r, 'update'), scopeOf(r, uid));
      validate('body', `${r.collection}.update`, data);
      const updated = await resources.update(r, uid, data, updateMask(ctx), { actor: principal(ctx).subject, guard: policy.noEscalation(principal(ctx), r) });
      ctx.body = await one(ctx, updated, present);
    },
    delete: (r, names) => async (ctx) => {
      const { uid } = pathParams(ctx, names);
      await policy.requireCapability(principal(ctx), capability(r, 'delete'), scopeOf(r, uid));
      await resources.delete(r, uid, principal(ctx).subject);
      ctx.body = {};
    },
    subresourceGet: (r, name) => async (ctx) => {
      const { uid } = pathParams(ctx, ['uid']);
      const s = r.subresources.find((x) => x.name === name)!;
      await policy.requireCapability(principal(ctx), s.get.capability, scopeOf(r, uid));
      ctx.body = await resources.getSubresource(r, name, uid);
    },
    subresourceUpdate: (r, name) => async (ctx) => {
      const { uid } = pathParams(ctx, ['uid']);
      const s = r.subresources.find((x) => x.name === name)!;
      const data = body(ctx);
      await policy.requireCapability(principal(ctx), s.update!.capability, scopeOf(r, uid));
      validate('body', `${r.collection}.${name}.update`, data);
      ctx.body = await resources.updateSubresource(r, name, uid, data, updateMask(ctx), principal(ctx).subject);
    },
    endpoint: (e, names, call) => async (ctx) => {
      const params = pathParams(ctx, names);
      const query = queryObject(ctx);
      await policy.requireCapability(principal(ctx), e.capability, e.scope ? params[e.scope] : undefined);
      validate('query', `${e.domain}.${e.name}.query`, query);
      const request: Record<string, unknown> = { ...query, ...params };
      if (e.body) {
        const data = body(ctx);
        validate('body', `${e.domain}.${e.name}.body`, data);
        request.body = data;
      }
      ctx.body = await call(request, handlerContext(ctx));
    },
    queryParameters: (takes) => async (ctx, next) => {
      checkParameterNames(ctx.query, takes);
      await next();
    },
  };
}
