// Every HTTP route of the model, in match order: the one list both the router and the OpenAPI document use.
import type { ApiModel, EndpointModel, ResourceModel } from '../runtime/model/api-model.js';
import type { RpcKind } from '../runtime/grpc/rpc.js';
import { readTemplate } from '../runtime/http/route-template.js';

/** A route serves the same operations an rpc does: one list of kinds for both transports. */
export type RouteKind = RpcKind;

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** OpenAPI-style path, e.g. /registry/v2/repos/{uid} */
  path: string;
  /** the router's template: the path with a uid capture marked as spanning segments, e.g. /registry/v2/repos/{uid*} */
  template: string;
  /** the literal text every path of the route starts with, e.g. /registry/v2/repos/ */
  prefix: string;
  params: string[];
  kind: RouteKind;
  resource?: ResourceModel;
  subresource?: string;
  endpoint?: EndpointModel;
}

/** The routes of v2's documents (/openapi.json): the calls only v1 has are left out. */
export const v2Routes = (routes: Route[]): Route[] => routes.filter((r) => !r.endpoint?.version);

/** A template such as repos/{repoUid*}/digests/{digest} under its prefix, as a route; {x*} is a uid, which may span segments. */
export function compileTemplate(
  prefix: string,
  template: string,
): Pick<Route, 'path' | 'template' | 'prefix' | 'params'> {
  const read = readTemplate(template ? `${prefix}/${template}` : prefix);
  return {
    path: read.template.replace(/\{(\w+)\*\}/g, '{$1}'),
    template: read.template,
    prefix: read.prefix,
    params: read.captures.map((c) => c.name),
  };
}

function specificity(r: Route): number {
  // Routes with literal text after a multi-segment parameter must be tried before the plain {uid} routes.
  const { captures, literals } = readTemplate(r.template);
  const wildcard = captures.findIndex((c) => c.spans);
  if (wildcard < 0) return 0;
  return literals.slice(wildcard + 1).join('') !== '' ? 1 : 2;
}

export function routesOf(model: ApiModel): Route[] {
  const routes: Route[] = [];
  for (const e of model.endpoints) {
    routes.push({
      method: e.method,
      ...compileTemplate(`/${e.prefix ?? e.domain}/${e.version ?? model.version}`, e.path),
      kind: 'endpoint',
      endpoint: e,
    });
  }
  for (const r of Object.values(model.resources)) {
    const base = `/${r.domain}/${model.version}`;
    const ops = r.operations;
    if (ops.list) {
      routes.push({
        method: 'GET',
        ...compileTemplate(base, r.listPath ? r.listPath.replace('{parent}', '{parent*}') : r.path),
        kind: 'list',
        resource: r,
      });
    }
    for (const s of r.subresources) {
      routes.push({
        method: 'GET',
        ...compileTemplate(base, `${r.path}/{uid*}/${s.name}`),
        kind: 'subresourceGet',
        resource: r,
        subresource: s.name,
      });
      if (s.update)
        routes.push({
          method: 'PATCH',
          ...compileTemplate(base, `${r.path}/{uid*}/${s.name}`),
          kind: 'subresourceUpdate',
          resource: r,
          subresource: s.name,
        });
    }
    if (ops.create) {
      if (r.parent)
        routes.push({ method: 'POST', ...compileTemplate(base, `${r.path}/{parent*}`), kind: 'create', resource: r });
      if (!r.parent || r.parentOptional)
        routes.push({ method: 'POST', ...compileTemplate(base, r.path), kind: 'create', resource: r });
    }
    if (r.batchDelete)
      routes.push({
        method: 'POST',
        ...compileTemplate(base, `${r.path}:batchDelete`),
        kind: 'batchDelete',
        resource: r,
      });
    if (r.batchCreate)
      routes.push({
        method: 'POST',
        ...compileTemplate(base, `${r.path}:batchCreate`),
        kind: 'batchCreate',
        resource: r,
      });
    if (ops.get) routes.push({ method: 'GET', ...compileTemplate(base, `${r.path}/{uid*}`), kind: 'get', resource: r });
    if (ops.update)
      routes.push({ method: 'PATCH', ...compileTemplate(base, `${r.path}/{uid*}`), kind: 'update', resource: r });
    if (ops.delete)
      routes.push({ method: 'DELETE', ...compileTemplate(base, `${r.path}/{uid*}`), kind: 'delete', resource: r });
  }
  // Stable order: specificity, then path, then method, so output never depends on declaration accidents.
  return routes
    .map((r, i) => ({ r, i }))
    .sort((a, b) => specificity(a.r) - specificity(b.r) || a.i - b.i)
    .map(({ r }) => r);
}
