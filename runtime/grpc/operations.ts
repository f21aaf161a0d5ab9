// The gRPC adapter's side of the one pipeline: a request message, read as proto3 JSON, becomes a Call by its rpc's
// field routes (where HTTP would carry each field: path, query, body, mask), runs through Operations, and the
// answer goes back as the JSON of the response message. It translates only: the pipeline authorizes and validates.
import type { Principal } from '../access/authorization.js';
import { invalidArgument } from '../model/errors.js';
import { unsafeJson } from '../pipeline/input-safety.js';
import type { EndpointModel, ResourceModel } from '../model/api-model.js';
import type { Call, EndpointHandler, Operations, Present, Prepare } from '../pipeline/operations.js';
import { snakeCase } from '../model/field-names.js';
import type { Row } from '../model/records.js';
import { checkUidParams } from '../http/route-operations.js';
import type { RpcRoute } from './rpc.js';

export interface RpcMethod {
  route: RpcRoute;
  /** the API domain of the rpc: its errors' domain is <domain>.<service>.dev */
  domain: string;
  /**
   * The rpc reads the bearer token itself rather than being authenticated by it: the token exchange takes
   * another issuer's token. run gets it as `bearer`, and an anonymous principal.
   */
  readsBearer?: true;
  /** runs the request (proto3 JSON of the request message) and answers the JSON of the response message */
  run(request: Row, principal: Principal, bearer?: string): Promise<Row>;
}

export interface RpcOperations {
  list(r: ResourceModel, route: RpcRoute, present?: Present): RpcMethod;
  get(r: ResourceModel, route: RpcRoute, present?: Present): RpcMethod;
  create(r: ResourceModel, route: RpcRoute, present?: Present, prepare?: Prepare): RpcMethod;
  batchCreate(r: ResourceModel, route: RpcRoute, present?: Present, prepare?: Prepare): RpcMethod;
  batchDelete(r: ResourceModel, route: RpcRoute, present?: Present): RpcMethod;
  update(r: ResourceModel, route: RpcRoute, present?: Present): RpcMethod;
  delete(r: ResourceModel, route: RpcRoute): RpcMethod;
  subresourceGet(r: ResourceModel, route: RpcRoute, name: string): RpcMethod;
  subresourceUpdate(r: ResourceModel, route: RpcRoute, name: string): RpcMethod;
  endpoint(e: EndpointModel, route: RpcRoute, handler: EndpointHandler): RpcMethod;
}

/** The request as the pipeline takes it. */
export function callOf(route: RpcRoute, request: Row, principal: Principal): Call {
  // What HTTP refuses in the request line and the body (NUL characters, prototype keys), refused here too.
  const unsafe = unsafeJson(request);
  if (unsafe) throw invalidArgument([unsafe]);
  const call: Call = { principal, params: {}, query: {}, body: {} };
  for (const [key, value] of Object.entries(request)) {
    const to = route.fields[key];
    if (!to) continue;
    // proto3 has no unset string: an empty one is a parameter not given.
    if (to.to === 'param') {
      if (value !== '') call.params[to.name] = String(value);
    } else if (to.to === 'mask') call.mask = String(value) || undefined;
    else if (to.to === 'body') {
      if (to.name) call.body[to.name] = value;
      else call.body = { ...(value as Row) };
    } else if (to.name.endsWith('.')) {
      // A message of query parameters (uidp): HTTP spells its fields uidp.descendants_of and so on.
      for (const [k, v] of Object.entries(value as Row)) call.query[`${to.name}${snakeCase(k)}`] = v;
    } else call.query[to.name] = value;
  }
  return call;
}

/**
 * Every path parameter of the rpc's HTTP route is given: HTTP cannot send an empty one (no route matches), a proto3
 * message can. Only a create whose resource HTTP also creates at the root (groups, identities) may omit its parent.
 */
function requireParams(route: RpcRoute, call: Call, optional?: string): void {
  for (const [key, to] of Object.entries(route.fields))
    if (to.to === 'param' && to.name !== optional && call.params[to.name] === undefined)
      throw invalidArgument([{ field: snakeCase(key), description: `${snakeCase(key)} is required` }]);
}

/** An update names its record by the uid inside the message (repo.uid), as the HTTP rule's path does. */
function updateCall(route: RpcRoute, request: Row, principal: Principal): Call {
  const call = callOf(route, request, principal);
  const field = Object.keys(route.fields).find((k) => route.fields[k].to === 'body' && !route.fields[k].name)!;
  const uid = call.body.uid;
  if (typeof uid !== 'string' || uid === '')
    throw invalidArgument([
      { field: `${snakeCase(field)}.uid`, description: 'the uid of the record to change is required' },
    ]);
  delete call.body.uid;
  call.params.uid = uid;
  return call;
}

export function createRpcOperations(operations: Operations): RpcOperations {
  const method = (
    domain: string,
    route: RpcRoute,
    run: (call: Call) => Promise<Row>,
    toCall: typeof callOf = callOf,
    optionalParam?: string,
  ): RpcMethod => ({
    route,
    domain,
    run: async (request, principal) => {
      const call = toCall(route, request, principal);
      requireParams(route, call, optionalParam);
      checkUidParams(call.params);
      return run(call);
    },
  });
  return {
    list: (r, route, present) =>
      method(r.domain, route, async (call) => {
        const page = await operations.list(r, call, { present });
        return {
          [r.collection]: page.items,
          nextPageToken: page.nextPageToken,
          totalCount: page.totalCount,
          skipped: page.skipped,
        };
      }),
    get: (r, route, present) => method(r.domain, route, (call) => operations.get(r, call, present)),
    create: (r, route, present, prepare) =>
      method(
        r.domain,
        route,
        (call) => operations.create(r, call, { present, prepare }),
        callOf,
        r.parent && !r.parentOptional ? undefined : 'parent',
      ),
    batchCreate: (r, route, present, prepare) =>
      method(r.domain, route, async (call) => ({
        [r.collection]: await operations.batchCreate(r, call, { present, prepare }),
      })),
    batchDelete: (r, route, present) =>
      method(r.domain, route, async (call) => ({
        [r.collection]: await operations.batchDelete(r, call, present),
        parent: call.body.parent,
      })),
    update: (r, route, present) => method(r.domain, route, (call) => operations.update(r, call, present), updateCall),
    delete: (r, route) =>
      method(r.domain, route, async (call) => {
        await operations.delete(r, call);
        return {};
      }),
    subresourceGet: (r, route, name) => method(r.domain, route, (call) => operations.getSubresource(r, name, call)),
    subresourceUpdate: (r, route, name) =>
      method(r.domain, route, (call) => operations.updateSubresource(r, name, call), updateCall),
    endpoint: (e, route, handler) =>
      method(e.domain, route, async (call) => (await operations.endpoint(e, call, handler)) as Row),
  };
}
