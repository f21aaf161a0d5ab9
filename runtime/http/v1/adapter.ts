// The v1 HTTP adapter: one generic adapter over the pipeline for every resource that declares its v1 names.
// v1 differs in shape, not in data: same records, tokens and capabilities, the same order of checks.
//   list    GET    /<domain>/v1/<v1 collection>?id=&uidp.*=&<filters>  -> {items: [...]} (every match, or one page)
//   create  POST   /<domain>/v1/<v1 collection>/{parent}               (or the parent in the body: createRequest)
//   update  PUT    /<domain>/v1/<v1 collection>/{id}                   (full replacement: omitted fields reset)
//   delete  DELETE /<domain>/v1/<v1 collection>/{id}
// and, through the V1Extensions the composition root passes in, what a resource's v1 has beyond that and cannot be
// declared (advisory events). The calls only v1 has are endpoints of the spec with `version: v1`, in the generated
// router. Errors are rendered in v1's shape by the application (runtime/http/app.ts): code and message, no typed
// details.
import type { HttpContext, Middleware } from '../context.js';
import { Router } from '../router.js';
import type { Policy } from '../../access/authorization.js';
import { invalidArgument } from '../../model/errors.js';
import { operationOf, type ApiModel, type ResourceModel } from '../../model/api-model.js';
import type { Call, Operations, Prepare } from '../../pipeline/operations.js';
import type { Row } from '../../model/records.js';
import type { Resources } from '../../resources/standard-methods.js';
import { callOf, requestBody } from '../route-operations.js';
import { isUidPath } from '../../model/uid.js';
import { checkParameterNames, type Validators } from '../../pipeline/validation.js';
import { listValues } from '../../lists/list-request.js';
import { V1Shape } from './rename.js';

export interface V1Deps {
  model: ApiModel;
  resources: Resources;
  policy: Policy;
  validators: Validators;
  operations: Operations;
  /** The hand-written create steps v2 runs, by collection: v1 runs them too. */
  createSteps: Record<string, Prepare>;
}

/** A v1 view of records that the renames cannot express (ids of embedded items), given per collection. */
export interface V1Presenter {
  out(record: Row): Row;
  in(body: Row): Row;
}

/** What one resource's v1 has beyond the generic adapter: a presenter, and routes of its own. */
export interface V1Extension {
  presenter?: V1Presenter;
  /** `shape` converts the resource's records between v2 and v1, the presenter included. */
  routes?(router: Router, r: ResourceModel, shape: V1Presenter, deps: V1Deps): void;
}

/** v1's writes take no query parameters: one sent is refused by name, never ignored. Reads check their own. */
const writesTakeNoQuery: Middleware = async (ctx, next) => {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') checkParameterNames(ctx.query);
  await next();
};

/** A v1 list query in v2's names: `id` is one more of uidp.ids, renamed parameters take their v2 names. */
function v2Query(query: Record<string, unknown>, params: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    if (name === 'id') continue;
    out[Object.hasOwn(params, name) ? params[name] : name] = value;
  }
  // Counted under v1's own name: folded into uidp.ids first, a refusal would name a parameter never sent.
  const ids = listValues(query.id, 'id');
  if (ids.length > 0) out['uidp.ids'] = [...[out['uidp.ids'] ?? []].flat(), ...ids];
  return out;
}

/** v1 records with the fields their subresources hold: those of the call that wrote them, or as stored (one read). */
async function withSubresourceFields(deps: V1Deps, r: ResourceModel, records: Row[], written?: Call): Promise<Row[]> {
  const held = Object.entries(r.v1!.subresourceFields);
  if (held.length === 0) return records;
  const uids = records.map((record) => record.uid as string);
  const stored = new Map<string, Map<string, Row>>();
  for (const [, { subresource }] of held)
    if (!written && !stored.has(subresource))
      stored.set(subresource, await deps.resources.subresourcesOf(r, subresource, uids));
  return records.map((record) => {
    const out = { ...record };
    for (const [name, { subresource, field }] of held) {
      const from = written ? written.subresources?.[subresource] : stored.get(subresource)?.get(record.uid as string);
      const value = from?.[field];
      if (value !== undefined && value !== '') out[name] = value; // unset, as the record's own empty fields
    }
    return out;
  });
}

/** `extensions` by collection. */
export function createV1Router(deps: V1Deps, extensions: Record<string, V1Extension> = {}): Router {
  const { model, operations } = deps;
  const router = new Router();
  router.use(writesTakeNoQuery);

  for (const r of Object.values(model.resources)) {
    const extension = extensions[r.collection];
    if (!r.v1) continue;
    const v1 = r.v1;
    const renames = new V1Shape(r, model);
    const presenter = extension?.presenter;
    const shape: V1Presenter = {
      out: (record: Row) => renames.out(presenter ? presenter.out(record) : record),
      in: (data: Row) => renames.in(presenter ? presenter.in(data) : data),
    };
    const held = Object.entries(v1.subresourceFields);
    /**
     * A write's call: the body in v2's names, what v1 spelled unknowably left for the validation step, and the
     * fields a subresource holds written whole with the record (an update replaces them: omitted is cleared).
     */
    const writeCall = (ctx: HttpContext, params: Record<string, string>, given: Row, mask?: string): Call => {
      const record = { ...given };
      const subresources: Record<string, Row> = {};
      for (const [name, { subresource, field }] of held) {
        const value = record[name];
        delete record[name];
        if (value !== undefined || mask === '*') (subresources[subresource] ??= {})[field] = value ?? '';
      }
      const { data, problems } = renames.translate(presenter ? presenter.in(record) : record);
      return { ...callOf(ctx, [], data), params, mask, untranslatable: problems, subresources };
    };
    const withHeld = (records: Row[], written?: Call) => withSubresourceFields(deps, r, records, written);
    const base = `/${r.domain}/v1/${v1.collection}`;

    if (operationOf(r, 'list')) {
      router.get(base, async (ctx) => {
        const call = { ...callOf(ctx, []), query: v2Query(ctx.query, v1.params) };
        const page = await operations.list(r, call, { whole: !v1.paged });
        const items = (await withHeld(page.items)).map(shape.out);
        ctx.body = v1.paged ? { items, nextPageToken: page.nextPageToken, totalCount: page.totalCount } : { items };
      });
    }
    if (operationOf(r, 'create')) {
      const prepare = deps.createSteps[r.collection];
      const create = async (ctx: HttpContext, parent: string | undefined, given: Row) => {
        const call = writeCall(ctx, parent === undefined ? {} : { parent }, given);
        ctx.body = shape.out((await withHeld([await operations.create(r, call, { prepare })], call))[0]);
      };
      const request = v1.createRequest;
      if (request) {
        router.post(base, async (ctx) => {
          const { [request.parent]: parent, [request.resource]: given = {} } = requestBody(ctx);
          if (typeof parent !== 'string' || !isUidPath(parent)) {
            throw invalidArgument([
              {
                field: request.parent,
                description: `${request.parent} must be the uid of the ${r.parent ? model.resources[r.parent].type.toLowerCase() : 'parent'} to create in`,
              },
            ]);
          }
          if (typeof given !== 'object' || given === null || Array.isArray(given)) {
            throw invalidArgument([{ field: request.resource, description: `${request.resource} must be an object` }]);
          }
          await create(ctx, parent, given as Row);
        });
      } else {
        const inPath: Middleware = async (ctx) =>
          create(ctx, ctx.captures?.length ? callOf(ctx, ['parent'], {}).params.parent : undefined, requestBody(ctx));
        if (r.parent) router.post(`${base}/{parent*}`, inPath);
        if (!r.parent || r.parentOptional) router.post(base, inPath);
      }
    }
    if (operationOf(r, 'update')) {
      router.put(`${base}/{id*}`, async (ctx) => {
        const { id } = callOf(ctx, ['id'], {}).params;
        const call = writeCall(ctx, { uid: id }, requestBody(ctx), '*');
        ctx.body = shape.out((await withHeld([await operations.update(r, call)], call))[0]);
      });
    }
    if (operationOf(r, 'delete')) {
      router.delete(`${base}/{id*}`, async (ctx) => {
        const { id } = callOf(ctx, ['id'], {}).params;
        await operations.delete(r, { ...callOf(ctx, [], {}), params: { uid: id } });
        ctx.body = {};
      });
    }
    extension?.routes?.(router, r, shape, deps);
  }
  return router;
}
