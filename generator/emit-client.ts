// generated/client/index.ts: the typed TypeScript client, a method per v2 operation named after it (createRepo,
// listRepos), grouped by domain. Each method takes one request object (path parameters, query
// parameters, and `body`) and answers the typed response; a list also gets listAll<Collection>, every item across
// its pages. The engine (fetch, errors, paging, retries) is runtime/client.ts.
import { batchItemName, type ApiModel, type FieldModel, type ResourceModel } from '../runtime/model.js';
import { cap } from './emit-openapi.js';
import { v2Routes, type Route } from './routes-table.js';
import { objectType } from './typescript.js';

const propertyName = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));

/** What a request may write: every field but output-only ones. */
function inputFields(fields: Record<string, FieldModel>): Record<string, FieldModel> {
  return Object.fromEntries(Object.entries(fields).filter(([, f]) => !f.outputOnly));
}

/** The query parameters of a list: paging, the hierarchy filter and the resource's own filters. */
function listQuery(r: ResourceModel): string {
  const members = [
    'pageSize?: number',
    'pageToken?: string',
    'skip?: number',
    `orderBy?: ${Object.keys(r.orderBy)
      .flatMap((k) => [k, `${k} desc`])
      .map((k) => JSON.stringify(k))
      .join(' | ')}`,
    '"uidp.descendants_of"?: string',
    '"uidp.children_of"?: string',
    '"uidp.ancestors_of"?: string',
    '"uidp.in_root"?: boolean',
    '"uidp.ids"?: string[]',
    ...r.filters.map(
      (f) => `${propertyName(f.param)}?: ${f.match === 'anyOf' ? 'string[]' : 'string | number | boolean'}`,
    ),
  ];
  return members.join('; ');
}

const pathMembers = (route: Route) => route.params.map((p) => `${propertyName(p)}: string`);

/** One method (or two, for a list) of the client, as object members; `types` collects the type names used. */
function methods(route: Route, types: Set<string>): string[] {
  const r = route.resource;
  const table = JSON.stringify({ method: route.method, path: route.path, params: route.params });
  const request = (members: string[], optional = false) => `request${optional ? '?' : ''}: { ${members.join('; ')} }`;
  switch (route.kind) {
    case 'list': {
      types.add(`${r!.type}Resource`);
      const req = request([...pathMembers(route), listQuery(r!)], route.params.length === 0);
      const page = `Page<${JSON.stringify(r!.collection)}, ${r!.type}Resource>`;
      return [
        `list${cap(r!.collection)}: (${req}): Promise<${page}> => c.call(${table}, request)`,
        `listAll${cap(r!.collection)}: (${req}): AsyncIterable<${r!.type}Resource> => c.items(${table}, ${JSON.stringify(r!.collection)}, request)`,
      ];
    }
    case 'get':
      types.add(`${r!.type}Resource`);
      return [
        `get${r!.type}: (${request(pathMembers(route))}): Promise<${r!.type}Resource> => c.call(${table}, request)`,
      ];
    case 'create': {
      types.add(`${r!.type}Resource`);
      const name = route.params.length ? `create${r!.type}` : `create${r!.type}AtRoot`;
      const body = `body: ${objectType(inputFields(r!.fields), false)}`;
      return [
        `${name}: (${request([...pathMembers(route), body])}): Promise<${r!.type}Resource> => c.call(${table}, request)`,
      ];
    }
    case 'batchCreate': {
      types.add(`${r!.type}Resource`);
      // A shared field may be left out of each request: the top-level one fills it.
      const fields = Object.fromEntries(
        Object.entries(inputFields(r!.fields)).map(([name, f]) => [
          name,
          r!.batchCreate!.shared.includes(name) ? { ...f, required: false } : f,
        ]),
      );
      const input = objectType(fields, false);
      const shared = r!.batchCreate!.shared.map((name) => `${propertyName(name)}?: string`);
      const req = request([
        'parent: string',
        `requests: Array<{ parent?: string; ${batchItemName(r!)}: ${input} }>`,
        ...shared,
      ]);
      return [
        `batchCreate${cap(r!.collection)}: (${req}): Promise<{ ${r!.collection}: ${r!.type}Resource[] }> => c.call(${table}, { body: request })`,
      ];
    }
    case 'batchDelete':
      types.add(`${r!.type}Resource`);
      return [
        `batchDelete${cap(r!.collection)}: (${request(['parent: string', 'names: string[]'])}): Promise<{ ${r!.collection}: ${r!.type}Resource[]; parent: string }> => c.call(${table}, { body: request })`,
      ];
    case 'update': {
      types.add(`${r!.type}Resource`);
      const body = `body: Partial<${objectType(inputFields(r!.fields), false)}>`;
      const req = request([...pathMembers(route), body, 'updateMask?: string']);
      return [`update${r!.type}: (${req}): Promise<${r!.type}Resource> => c.call(${table}, request)`];
    }
    case 'delete':
      return [
        `delete${r!.type}: (${request(pathMembers(route))}): Promise<void> => c.call<unknown>(${table}, request).then(() => undefined)`,
      ];
    case 'subresourceGet':
    case 'subresourceUpdate': {
      const s = r!.subresources.find((x) => x.name === route.subresource)!;
      const shown = `{ uid: string } & ${objectType(s.fields, false, 'resource')}`;
      if (route.kind === 'subresourceGet')
        return [`get${s.type}: (${request(pathMembers(route))}): Promise<${shown}> => c.call(${table}, request)`];
      const body = `body: ${objectType(inputFields(s.fields), false)}`;
      return [
        `update${s.type}: (${request([...pathMembers(route), body])}): Promise<${shown}> => c.call(${table}, request)`,
      ];
    }
    case 'endpoint': {
      const e = route.endpoint!;
      types.add(`${cap(e.name)}Request`);
      types.add(`${cap(e.name)}Response`);
      return [
        `${e.name}: (request: ${cap(e.name)}Request): Promise<${cap(e.name)}Response> => c.call(${table}, request)`,
      ];
    }
  }
}

export function emitClient(model: ApiModel, routes: Route[], banner: string): string {
  const byDomain = new Map<string, string[]>();
  const resourceTypes = new Set<string>();
  const endpointTypes = new Set<string>();
  for (const route of v2Routes(routes)) {
    const domain = route.resource?.domain ?? route.endpoint!.domain;
    const types = route.kind === 'endpoint' ? endpointTypes : resourceTypes;
    byDomain.set(domain, [...(byDomain.get(domain) ?? []), ...methods(route, types)]);
  }
  const domains = [...byDomain.keys()].sort();
  return `${banner}
import { Client, type ClientOptions, type Page } from '../../runtime/client.js';
import type { ${[...resourceTypes].sort().join(', ')} } from '../types.js';
import type { ${[...endpointTypes].sort().join(', ')} } from '../routes.js';

export { ApiCallError, type ClientOptions, type ErrorDetail, type Page } from '../../runtime/client.js';

/** A client of ${model.title}: a method per operation, by domain (client.registry.listRepos(...)). */
export function createClient(options: ClientOptions) {
  const c = new Client(options);
  return {
${domains
  .map(
    (d) =>
      `    ${propertyName(d)}: {\n${byDomain
        .get(d)!
        .map((m) => `      ${m},`)
        .join('\n')}\n    },`,
  )
  .join('\n')}
  };
}

export type PlatformClient = ReturnType<typeof createClient>;
`;
}
