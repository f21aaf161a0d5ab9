// The v1 compatibility routes: one adapter over the v2 runtime for every resource that declares its v1 names.
// v1 differs in shape, not in data: same records, same tokens, same capabilities.
//   list    GET    /<domain>/v1/<v1 collection>?id=&uidp.*=&<filters>  -> {items: [...]} (every page, no total)
//   create  POST   /<domain>/v1/<v1 collection>/{parent}
//   update  PUT    /<domain>/v1/<v1 collection>/{id}                   (full replacement: omitted fields reset)
//   delete  DELETE /<domain>/v1/<v1 collection>/{id}
// and, through V1Extensions (handlers/v1-*.ts), the calls only v1 has.
// v1 field names come from the spec; role capabilities travel as dotted names. Errors keep code and message
// but no typed details, and a filtered list that matches nothing is an empty 200.
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { capabilityScope, type Policy, type Principal } from '../runtime/authorization.js';
import { invalidArgument } from '../runtime/errors.js';
import { parseListRequest } from '../runtime/list-request.js';
import { operationOf, type ApiModel, type FieldModel, type ResourceModel } from '../runtime/model.js';
import type { Row } from '../runtime/records.js';
import type { Resources } from '../runtime/resources.js';
import { body, pathParams, type Prepare } from '../runtime/route-operations.js';
import { isUidPath, uidCapture } from '../runtime/uid.js';
import { check, checkParameterNames, type Validators } from '../runtime/validation.js';

export interface V1Deps {
  model: ApiModel; resources: Resources; policy: Policy; validators: Validators;
  /** The hand-written create steps v2 runs, by collection: v1 runs them too. */
  createSteps: Record<string, Prepare>;
}

/** What one resource's v1 has beyond the generic adapter: a presenter, and routes of its own. */
export interface V1Extension {
  presenter?: V1Presenter;
  /** `shape` converts the resource's records between v2 and v1, the presenter included. */
  routes?(router: Router, r: ResourceModel, shape: V1Presenter, deps: V1Deps): void;
}

/** One level of renaming: field names, enum values, and the levels of nested objects. */
interface Level {
  names: Record<string, string>;
  values: Record<string, Record<string, string>>;
  nested: Record<string, Level>;
  /** Renaming into v2: the values already spelled as v2 spells them, accepted as they are. */
  accepted?: Record<string, Set<string>>;
}

const emptyLevel = (): Level => ({ names: {}, values: {}, nested: {} });

function levelAt(root: Level, path: string[]): Level {
  return path.reduce((level, name) => (level.nested[name] ??= emptyLevel()), root);
}

const invertMap = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).map(([a, b]) => [b, a]));

/** The same renames the other way: keys become v1 names. */
function invert(level: Level): Level {
  const v1 = (k: string) => level.names[k] ?? k;
  return {
    names: invertMap(level.names),
    values: Object.fromEntries(Object.entries(level.values).map(([k, m]) => [v1(k), invertMap(m)])),
    accepted: Object.fromEntries(Object.entries(level.values).map(([k, m]) => [v1(k), new Set(Object.keys(m))])),
    nested: Object.fromEntries(Object.entries(level.nested).map(([k, l]) => [v1(k), invert(l)])),
  };
}

/** A table's own entry for a key from a request: never an Object.prototype member ("constructor", "toString"). */
const own = <T>(table: Record<string, T> | undefined, key: string): T | undefined => (table && Object.hasOwn(table, key) ? table[key] : undefined);

/** Renames a value; `accepted` (requests only) refuses an enum value that is in neither spelling, naming v1's. */
function rename(value: unknown, level: Level | undefined, values: Record<string, string> | undefined, path: string, accepted?: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v, i) => rename(v, level, values, `${path}[${i}]`, accepted));
  if (values && typeof value === 'string') {
    if (accepted && own(values, value) === undefined && !accepted.has(value)) {
      const names = Object.keys(values);
      const choices = names.length > 8 ? `a known name such as ${names.slice(0, 3).join(', ')}` : `one of ${names.join(', ')}`;
      throw invalidArgument([{ field: path, description: `${path} must be ${choices}; "${value}" is not` }]);
    }
    return own(values, value) ?? value;
  }
  if (!level || value === null || typeof value !== 'object') return value;
  const out: Row = {};
  for (const [k, v] of Object.entries(value)) {
    out[own(level.names, k) ?? k] = rename(v, own(level.nested, k), own(level.values, k), path ? `${path}.${k}` : k, own(level.accepted, k));
  }
  return out;
}

/**
 * Renames between v2 and v1: field names (also inside nested objects), enum values v1 spells differently, and
 * capability enum names to and from their dotted form.
 */
class V1Shape {
  private readonly toV1: Level = emptyLevel();
  private readonly toV2: Level;

  constructor(r: ResourceModel, model: ApiModel) {
    for (const [path, name] of Object.entries(r.v1!.fields)) {
      const parts = path.split('.');
      levelAt(this.toV1, parts.slice(0, -1)).names[parts[parts.length - 1]] = name;
    }
    for (const [path, values] of Object.entries(r.v1!.values)) {
      const parts = path.split('.');
      levelAt(this.toV1, parts.slice(0, -1)).values[parts[parts.length - 1]] = values;
    }
    const isCapabilityEnum = (f: FieldModel) => f.type === 'enum' && !!f.values?.length && f.values.every((v) => v in model.capabilities);
    const dotted = Object.fromEntries(Object.entries(model.capabilities).map(([name, c]) => [name, c.v1]));
    for (const [k, f] of Object.entries(r.fields)) if (isCapabilityEnum(f)) this.toV1.values[k] = dotted;
    this.toV2 = invert(this.toV1);
  }

  out(record: Row): Row {
    return rename(record, this.toV1, undefined, '') as Row;
  }

  in(body: Row): Row {
    return rename(body, this.toV2, undefined, '') as Row;
  }
}

/** A v1 view of records that the renames cannot express (ids of embedded items), given per collection. */
export interface V1Presenter {
  out(record: Row): Row;
  in(body: Row): Row;
}

/** v1's writes take no query parameters: one sent is refused by name, never ignored. Reads check their own. */
function writesTakeNoQuery(): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') checkParameterNames(ctx.query);
    await next();
  };
}

/** `extensions` by collection. */
export function createV1Router(deps: V1Deps, extensions: Record<string, V1Extension> = {}): Router {
  const { model, resources, policy, validators } = deps;
  const router = new Router();
  router.use(writesTakeNoQuery());
  const principal = (ctx: Context) => ctx.state.principal as Principal;

  for (const r of Object.values(model.resources)) {
    const extension = extensions[r.collection];
    if (!r.v1) {
      extension?.routes?.(router, r, { out: (record) => record, in: (data) => data }, deps);
      continue;
    }
    const v1 = r.v1;
    const renames = new V1Shape(r, model);
    const presenter = extension?.presenter;
    const shape: V1Presenter = {
      out: (record: Row) => renames.out(presenter ? presenter.out(record) : record),
      in: (data: Row) => renames.in(presenter ? presenter.in(data) : data),
    };
    const base = `/${r.domain}/v1/${v1.collection}`.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const scopeOf = (uid: string | undefined) => capabilityScope(model, r, uid);
    const list = operationOf(r, 'list');
    const create = operationOf(r, 'create');
    const update = operationOf(r, 'update');
    const remove = operationOf(r, 'delete');

    if (list) {
      router.get(new RegExp(`^${base}$`), async (ctx) => {
        const query: Record<string, unknown> = { ...ctx.query };
        const id = query.id;
        delete query.id;
        for (const [v1Name, v2Name] of Object.entries(v1.params)) {
          if (query[v1Name] === undefined) continue;
          query[v2Name] = query[v1Name];
          delete query[v1Name];
        }
        // This v1 list answers every match: a page size or token would be ignored, so it is refused.
        const paging = v1.paged ? [] : ['pageSize', 'pageToken', 'page_size', 'page_token'].filter((name) => query[name] !== undefined);
        if (paging.length > 0) throw invalidArgument(paging.map((field) => ({ field, description: `${field}: this list answers every match, it does not page` })));
        check(validators.query(`${r.collection}.list`)!, query);
        const req = parseListRequest(query, r);
        if (typeof id === 'string' && id !== '') req.hierarchy.ids = [...(req.hierarchy.ids ?? []), id];
        const visible = await policy.visibility(principal(ctx), list.capability, r, req.hierarchy.descendantsOf ?? req.hierarchy.childrenOf);
        if (v1.paged) {
          const page = visible ? await resources.list(r, req, visible) : { items: [], nextPageToken: '', totalCount: '0' };
          ctx.body = { items: page.items.map(shape.out), nextPageToken: page.nextPageToken, totalCount: page.totalCount };
          return;
        }
        // v1 answers with the whole result set.
        ctx.body = { items: visible ? (await resources.listAll(r, req, visible)).map(shape.out) : [] };
      });
    }
    if (create) {
      const createIn = async (ctx: Context, parent: string | undefined, given: Row) => {
        const data = shape.in(given);
        await policy.requireCapability(principal(ctx), create.capability, scopeOf(parent));
        check(validators.body(`${r.collection}.create`)!, data);
        const step = deps.createSteps[r.collection];
        const context = { principal: principal(ctx), store: resources.store, resources, model };
        const created = await resources.create(r, parent, data, {
          actor: principal(ctx).subject, prepare: step && ((record) => step(record, context)), guard: policy.noEscalation(principal(ctx), r),
        });
        ctx.body = shape.out(created);
      };
      const request = v1.createRequest;
      if (request) {
        router.post(new RegExp(`^${base}$`), async (ctx) => {
          const { [request.parent]: parent, [request.resource]: given = {} } = body(ctx);
          if (typeof parent !== 'string' || !isUidPath(parent)) {
            throw invalidArgument([{ field: request.parent, description: `${request.parent} must be the uid of the ${r.parent ? model.resources[r.parent].type.toLowerCase() : 'parent'} to create in` }]);
          }
          if (typeof given !== 'object' || given === null || Array.isArray(given)) {
            throw invalidArgument([{ field: request.resource, description: `${request.resource} must be an object` }]);
          }
          await createIn(ctx, parent, given as Row);
        });
      } else {
        const inPath: Middleware = async (ctx) => createIn(ctx, ctx.captures?.length ? pathParams(ctx, ['parent']).parent : undefined, body(ctx));
        if (r.parent) router.post(new RegExp(`^${base}/${uidCapture}$`), inPath);
        if (!r.parent || r.parentOptional) router.post(new RegExp(`^${base}$`), inPath);
      }
    }
    if (update) {
      router.put(new RegExp(`^${base}/${uidCapture}$`), async (ctx) => {
        const uid = pathParams(ctx, ['id']).id;
        const data = shape.in(body(ctx));
        await policy.requireCapability(principal(ctx), update.capability, scopeOf(uid));
        check(validators.body(`${r.collection}.update`)!, data);
        ctx.body = shape.out(await resources.update(r, uid, data, '*', { actor: principal(ctx).subject, guard: policy.noEscalation(principal(ctx), r) }));
      });
    }
    if (remove) {
      router.delete(new RegExp(`^${base}/${uidCapture}$`), async (ctx) => {
        const uid = pathParams(ctx, ['id']).id;
        await policy.requireCapability(principal(ctx), remove.capability, scopeOf(uid));
        await resources.delete(r, uid, principal(ctx).subject);
        ctx.body = {};
      });
    }
    extension?.routes?.(router, r, shape, deps);
  }
  return router;
}
