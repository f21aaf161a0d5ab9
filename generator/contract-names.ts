// The reference contract's names for our HTTP operations: operationId `<Service>_<Rpc>` (ReposService_CreateRepo),
// a summary from the rpc ("Create Repo"), and the path parameter names grpc-gateway gives ({uid} for a create's
// parent, {artifactId} for a nested list's), so that a client generated from
// either document names its methods and arguments alike. A sub-resource keeps {uid}: the reference's
// {repoReadme.uid} is not a name OpenAPI linters can read. The router keeps its own names (routes-table.ts).
import type { ApiModel, ResourceModel } from '../runtime/model/api-model.js';
import { lowerCamelCase } from '../runtime/model/field-names.js';
import type { ProtoSurface, RpcDecl } from './proto-model.js';
import type { Route } from './routes-table.js';
import { parentField } from './spec-proto.js';

export interface ContractNames {
  operationId: string;
  summary: string;
  /** the route's path with the contract's parameter names */
  path: string;
  /** router parameter name -> contract parameter name */
  params: Record<string, string>;
}

const pascal = (s: string) => s[0].toUpperCase() + s.slice(1);
const words = (rpc: string) => rpc.replace(/([a-z0-9])([A-Z])/g, '$1 $2');
const shortName = (service: string) => service.split('.').pop()!;

/** The service of a resource's rpcs, or one named after its collection when it has none. */
function serviceOf(r: ResourceModel): string {
  return r.proto?.service ?? `${pascal(r.collection)}Service`;
}

/** The rpc name of a route without an rpc of its own (batch calls, a call not served, a root create). */
function rpcNameOf(route: Route): string {
  const r = route.resource;
  switch (route.kind) {
    case 'batchCreate':
    case 'batchDelete':
      return `${pascal(route.kind)}${pascal(r!.collection)}`;
    case 'create':
      return `Create${r!.type}${route.params.length === 0 ? 'AtRoot' : ''}`;
    default:
      return pascal(route.endpoint?.name ?? `${route.kind}${r!.type}`);
  }
}

export function contractNamer(model: ApiModel, surface: ProtoSurface): (route: Route) => ContractNames {
  const rpcOf = (route: Route): RpcDecl | undefined =>
    surface.rpcs.find((rpc) =>
      route.endpoint
        ? rpc.endpoint === route.endpoint
        : rpc.resource === route.resource && rpc.kind === route.kind && rpc.subresource === route.subresource,
    );
  return (route) => {
    const rpc = route.kind === 'create' && route.params.length === 0 ? undefined : rpcOf(route);
    const owner =
      route.resource ??
      Object.values(model.resources).find((r) => new RegExp(`^${r.path}(?=[/:]|$)`).test(route.endpoint!.path));
    const service = rpc
      ? shortName(rpc.service)
      : owner
        ? serviceOf(owner)
        : `${pascal(route.endpoint!.domain)}Service`;
    const name = rpc?.name ?? rpcNameOf(route);
    const params: Record<string, string> = {};
    const r = route.resource;
    if (route.kind === 'create' && route.params.includes('parent')) params.parent = 'uid';
    if (route.kind === 'list' && r?.listPath) params.parent = lowerCamelCase(parentField(r));
    const path = route.path.replace(/\{(\w+)\}/g, (_, p: string) => `{${params[p] ?? p}}`);
    return { operationId: `${service}_${name}`, summary: words(name), path, params };
  };
}
