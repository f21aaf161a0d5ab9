// v1 over gRPC: each v1 rpc is transcoded, by its google.api.http rule (the spec's `v1Proto`), into the request
// its v1 HTTP route takes, and that route runs it: the same v1 adapter (renamed fields, full-replacement updates,
// v1 list shapes, an empty list for the id of a gone record), the same pipeline, the same checks. One algorithm
// for every rpc; the rpcs of v1 services that no route serves answer a structured UNIMPLEMENTED.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { stringify } from 'node:querystring';
import type { Principal } from '../access/authorization.js';
import { ApiError, invalidArgument } from '../model/errors.js';
import { lowerCamelCase } from '../model/field-names.js';
import { HttpContext } from '../http/context.js';
import { unsafeJson } from '../pipeline/input-safety.js';
import type { Row } from '../model/records.js';
import type { RpcMethod } from './operations.js';
import type { NameTree, V1RpcRoute } from './rpc.js';

/** Runs a request through the HTTP routes that serve v1: true when answered at once; undefined when none serves it. */
export type V1Dispatch = (ctx: HttpContext) => Promise<void> | true | undefined;

const unimplemented = (path: string) =>
  new ApiError('UNIMPLEMENTED', `Unimplemented: ${path.slice(1)} is not served by this server`);

/** A message's JSON with the names of `tree` given (toHttp) or taken back; arrays element by element. */
function renamed(value: unknown, tree: NameTree | undefined, toHttp: boolean): unknown {
  if (!tree || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => renamed(v, tree, toHttp));
  const back = toHttp ? undefined : new Map(Object.entries(tree).flatMap(([json, n]) => (n.to ? [[n.to, json]] : [])));
  const out: Row = {};
  for (const [k, v] of Object.entries(value)) {
    const json = back?.get(k) ?? k;
    const names = Object.hasOwn(tree, json) ? tree[json] : undefined;
    out[toHttp ? (names?.to ?? k) : json] = renamed(v, names?.fields, toHttp);
  }
  return out;
}

/** The HTTP request of an rpc: path variables from their fields, the body, every other field a query parameter. */
function transcode(route: V1RpcRoute, request: Row): { path: string; query: Row; body?: Row } {
  const rest: Row = { ...request };
  const path = route.v1.template.replace(/\{(\w+)(?:=[^}]*)?\}/g, (_, field: string) => {
    const name = lowerCamelCase(field);
    const value = rest[name];
    delete rest[name];
    if (typeof value !== 'string' || value === '')
      throw invalidArgument([{ field, description: `${field} is required` }]);
    // uids travel with their / unescaped, as the v1 routes take them.
    return value.split('/').map(encodeURIComponent).join('/');
  });
  const { body } = route.v1;
  if (body === '*') return { path, query: {}, body: rest };
  const query: Row = {};
  const flatten = (prefix: string, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      for (const [k, v] of Object.entries(value)) flatten(`${prefix}.${k}`, v);
    else query[prefix] = value;
  };
  for (const [k, v] of Object.entries(rest)) if (k !== lowerCamelCase(body ?? '')) flatten(k, v);
  if (body === undefined) return { path, query };
  const given = rest[lowerCamelCase(body)];
  return { path, query, body: given && typeof given === 'object' ? (given as Row) : {} };
}

/** The query string of proto3 JSON values: each parameter by its JSON path, repeated ones repeated. */
const queryString = (query: Row) =>
  stringify(
    Object.fromEntries(
      Object.entries(query).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : String(v)]),
    ) as Record<string, string | string[]>,
  );

/** One request through the v1 routes, as HTTP would bring it; the answer's JSON. */
async function run(dispatch: V1Dispatch, method: string, url: string, principal: Principal, body?: Row) {
  const req = { method, url, headers: {}, socket: {}, complete: true } as unknown as IncomingMessage;
  const ctx = new HttpContext(req, {} as ServerResponse);
  ctx.state.principal = principal;
  if (body !== undefined) ctx.requestBody = body;
  const answered = dispatch(ctx);
  if (!answered) return undefined;
  await answered;
  return (typeof ctx.body === 'string' ? JSON.parse(ctx.body) : (ctx.body ?? {})) as Row;
}

/** Every v1 rpc by its :path: the served ones transcoded, the others UNIMPLEMENTED. */
export function v1Rpcs(routes: V1RpcRoute[], notServed: string[], dispatch: V1Dispatch): Record<string, RpcMethod> {
  const out: Record<string, RpcMethod> = {};
  for (const route of routes) {
    const domain = route.v1.template.split('/')[1];
    out[route.path] = {
      route: { path: route.path, request: route.request, response: route.response, fields: {} },
      domain,
      run: async (request, principal) => {
        // What HTTP refuses in the request line and the body (NUL characters, prototype keys), refused here too.
        const unsafe = unsafeJson(request);
        if (unsafe) throw invalidArgument([unsafe]);
        const names = route.v1.names;
        const { path, query, body } = transcode(route, renamed(request, names?.request, true) as Row);
        const search = queryString(query);
        const answer = await run(dispatch, route.v1.method, search ? `${path}?${search}` : path, principal, body);
        if (!answer) throw unimplemented(route.path);
        return renamed(answer, names?.response, false) as Row;
      },
    };
  }
  for (const path of notServed)
    out[path] = {
      // Answered before its message is read: google.protobuf.Empty reads any message.
      route: { path, request: 'google.protobuf.Empty', response: 'google.protobuf.Empty', fields: {} },
      domain: path.split('.')[2] ?? 'api',
      run: () => Promise.reject(unimplemented(path)),
    };
  return out;
}
