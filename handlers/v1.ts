// The v1 compatibility routes: one adapter over the v2 runtime for every resource that declares its v1 names.
// v1 differs in shape, not in data: same records, same tokens, same capabilities.
//   list    GET    /<domain>/v1/<v1 collection>?id=&uidp.*=&<filters>  -> {items: [...]} (every page, no total)
//   create  POST   /<domain>/v1/<v1 collection>/{parent}
//   update  PUT    /<domain>/v1/<v1 collection>/{id}                   (full replacement: omitted fields reset)
//   delete  DELETE /<domain>/v1/<v1 collection>/{id}
// and the calls only v1 has: ListEolTags (GET /registry/v1/eoltags, the tags marked deprecated).
// v1 field names come from the spec; role capabilities travel as dotted names. Errors keep code and message
// but no typed details, and a filtered list that matches nothing is an empty 200.
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { capabilityScope, type Policy, type Principal } from '../runtime/authorization.js';
import { ApiError } from '../runtime/errors.js';
import { maxPageSize, parseListRequest } from '../runtime/list-request.js';
import type { ApiModel, FieldModel, ResourceModel } from '../runtime/model.js';
import type { Row } from '../runtime/records.js';
import type { Resources } from '../runtime/resources.js';
import { body, pathParams } from '../runtime/route-operations.js';
import { check, type Validators } from '../runtime/validation.js';

interface V1Deps { model: ApiModel; resources: Resources; policy: Policy; validators: Validators }

/** Renames between v2 and v1 field names, and capability enum names to and from their dotted form. */
class V1Shape {
  private readonly toV1Name: Record<string, string>;
  private readonly toV2Name: Record<string, string>;
  private readonly capabilityFields: Set<string>;

  constructor(private readonly r: ResourceModel, private readonly model: ApiModel) {
    this.toV1Name = r.v1!.fields;
    this.toV2Name = Object.fromEntries(Object.entries(this.toV1Name).map(([v2, v1]) => [v1, v2]));
    const isCapabilityEnum = (f: FieldModel) => f.type === 'enum' && !!f.values?.length && f.values.every((v) => v in model.capabilities);
    this.capabilityFields = new Set(Object.entries(r.fields).filter(([, f]) => isCapabilityEnum(f)).map(([k]) => k));
  }

  out(record: Row): Row {
    const out: Row = {};
    for (const [k, v] of Object.entries(record)) {
      out[this.toV1Name[k] ?? k] = this.capabilityFields.has(k) && Array.isArray(v) ? v.map((c) => this.model.capabilities[c as string]?.v1 ?? c) : v;
    }
    return out;
  }

  in(body: Row): Row {
    const byDotted = new Map(Object.entries(this.model.capabilities).map(([name, c]) => [c.v1, name]));
    const out: Row = {};
    for (const [k, v] of Object.entries(body)) {
      const name = this.toV2Name[k] ?? k;
      out[name] = this.capabilityFields.has(name) && Array.isArray(v) ? v.map((c) => byDotted.get(c as string) ?? c) : v;
    }
    return out;
  }
}

/** v1 errors: the status and message of v2, without typed details. */
function v1Errors(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      ctx.status = e.status();
      ctx.body = { code: e.code, message: e.message, details: [] };
    }
  };
}

export function createV1Router({ model, resources, policy, validators }: V1Deps): Router {
  const router = new Router();
  router.use(v1Errors());
  const principal = (ctx: Context) => ctx.state.principal as Principal;

  for (const r of Object.values(model.resources)) {
    if (!r.v1) continue;
    const shape = new V1Shape(r, model);
    const base = `/${r.domain}/v1/${r.v1.collection}`.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const scopeOf = (uid: string | undefined) => capabilityScope(model, r, uid);
    const ops = r.operations;

    if (ops.list) {
      router.get(new RegExp(`^${base}$`), async (ctx) => {
        const query: Record<string, unknown> = { ...ctx.query };
        const id = query.id;
        delete query.id;
        const v2Validator = validators.query(`${r.collection}.list`)!;
        check(v2Validator, query);
        const req = parseListRequest({ ...query, page_size: maxPageSize, pageSize: undefined }, r);
        if (typeof id === 'string' && id !== '') req.hierarchy.ids = [...(req.hierarchy.ids ?? []), id];
        const visible = await policy.visibility(principal(ctx), ops.list!.capability, r);
        const items: Row[] = [];
        // v1 answers with the whole result set: walk every page of the v2 list.
        for (let token: string | undefined; visible;) {
          const page = await resources.list(r, { ...req, pageToken: token }, visible);
          items.push(...page.items.map((i) => shape.out(i)));
          token = page.nextPageToken || undefined;
          if (!token) break;
        }
        ctx.body = { items };
      });
    }
    if (ops.create) {
      const create: Middleware = async (ctx) => {
        const parent = ctx.captures?.length ? pathParams(ctx, ['parent']).parent : undefined;
        const data = shape.in(body(ctx));
        await policy.requireCapability(principal(ctx), ops.create!.capability, scopeOf(parent));
        check(validators.body(`${r.collection}.create`)!, data);
        ctx.body = shape.out(await resources.create(r, parent, data, principal(ctx).subject));
      };
      if (r.parent) router.post(new RegExp(`^${base}/(.+)$`), create);
      if (!r.parent || r.parentOptional) router.post(new RegExp(`^${base}$`), create);
    }
    if (ops.update) {
      router.put(new RegExp(`^${base}/(.+)$`), async (ctx) => {
        const uid = pathParams(ctx, ['id']).id;
        const data = shape.in(body(ctx));
        await policy.requireCapability(principal(ctx), ops.update!.capability, scopeOf(uid));
        check(validators.body(`${r.collection}.update`)!, data);
        ctx.body = shape.out(await resources.update(r, uid, data, '*', principal(ctx).subject));
      });
    }
    if (ops.delete) {
      router.delete(new RegExp(`^${base}/(.+)$`), async (ctx) => {
        const uid = pathParams(ctx, ['id']).id;
        await policy.requireCapability(principal(ctx), ops.delete!.capability, scopeOf(uid));
        await resources.delete(r, uid, principal(ctx).subject);
        ctx.body = {};
      });
    }
  }
  const tags = model.resources.tags;
  router.get('/registry/v1/eoltags', async (ctx) => {
    const query: Record<string, unknown> = { ...ctx.query };
    check(validators.query(`${tags.collection}.list`)!, query);
    const req = parseListRequest(query, tags);
    const visible = await policy.visibility(principal(ctx), tags.operations.list!.capability, tags);
    if (!visible) {
      ctx.body = { items: [], nextPageToken: '' };
      return;
    }
    const page = await resources.list(tags, req, [...visible, { deprecated: true }]);
    ctx.body = {
      items: page.items.map((t) => ({ id: t.uid, name: t.name, mainPackageName: t.mainPackageName ?? '', gracePeriodExpiryDate: t.gracePeriodExpiryDate })),
      nextPageToken: page.nextPageToken,
    };
  });
  return router;
}
