// generated/client/: the typed TypeScript client as a package of its own (npm pack generated/client), a method per
// v2 operation named after it (createRepo, listRepos), grouped by domain. Each method takes one request object
// (path parameters, query parameters, and `body`) and answers the typed response; a list also gets
// listAll<Collection>, every item across its pages. The folder holds the sources (types.ts: the resources and
// requests; index.ts: the operations as a table and the client's interface; engine.ts: client/engine.ts copied) and
// their JavaScript and declarations in dist/, made file by file by the compiler's transpiler: no type check here
// (npm run typecheck checks the sources), no dependency of the package but Node's fetch.
import { readFileSync } from 'node:fs';
import { ts } from 'ts-morph';
import {
  batchItemName,
  filterField,
  type ApiModel,
  type FilterModel,
  type ResourceModel,
} from '../runtime/model/api-model.js';
import { cap } from './emit-openapi.js';
import { v2Routes, type Route } from './routes-table.js';
import { endpointTypes, fieldType, objectType, propertyName, resourceMembers } from './typescript.js';

const engineSource = 'client/engine.ts';

/** What a list's filter parameter takes: the compared field's values in input form, several for anyOf. */
function filterType(r: ResourceModel, f: FilterModel): string {
  if (f.match === 'contains') return 'string';
  const one = fieldType(filterField(r, f), 'input');
  return f.match === 'anyOf' ? `ReadonlyArray<${one}>` : one;
}

/** The query parameters of a list: paging, the hierarchy filter and the resource's own filters. */
function listQuery(r: ResourceModel): string[] {
  const orders = Object.keys(r.orderBy).flatMap((k) => [k, `${k} desc`]);
  return [
    'pageSize?: number',
    'pageToken?: string',
    'skip?: number',
    `orderBy?: ${orders.map((k) => JSON.stringify(k)).join(' | ')}`,
    '"uidp.descendants_of"?: string',
    '"uidp.children_of"?: string',
    '"uidp.ancestors_of"?: string',
    '"uidp.in_root"?: boolean',
    '"uidp.ids"?: ReadonlyArray<string>',
    ...r.filters.map((f) => `${propertyName(f.param)}?: ${filterType(r, f)}`),
  ];
}

const pathMembers = (route: Route) => route.params.map((p) => `${propertyName(p)}: string`);
const shape = (members: string[]) => `{ ${members.join('; ')} }`;

/** A method of the client: its name, its request type, its answer type and how the engine calls it. */
interface Method {
  name: string;
  request: string;
  optional?: boolean;
  answer: string;
  mode: 'body' | 'none' | 'asBody' | 'items';
}

/** The methods of one route; `types` collects the named request types it declares. */
function methods(route: Route, types: string[]): Method[] {
  const r = route.resource;
  const input = (fields = r!.fields) =>
    objectType(Object.fromEntries(Object.entries(fields).filter(([, f]) => !f.outputOnly)), false, 'input');
  const resource = `${r?.type}Resource`;
  switch (route.kind) {
    case 'list': {
      const request = `List${cap(r!.collection)}Request`;
      types.push(`export type ${request} = ${shape([...pathMembers(route), ...listQuery(r!)])};`);
      const optional = route.params.length === 0;
      const page = `Page<${JSON.stringify(r!.collection)}, ${resource}>`;
      return [
        { name: `list${cap(r!.collection)}`, request, optional, answer: `Promise<${page}>`, mode: 'body' },
        {
          name: `listAll${cap(r!.collection)}`,
          request,
          optional,
          answer: `AsyncIterable<${resource}>`,
          mode: 'items',
        },
      ];
    }
    case 'get':
      return [
        { name: `get${r!.type}`, request: shape(pathMembers(route)), answer: `Promise<${resource}>`, mode: 'body' },
      ];
    case 'create': {
      const name = route.params.length ? `create${r!.type}` : `create${r!.type}AtRoot`;
      const request = shape([...pathMembers(route), `body: ${input()}`]);
      return [{ name, request, answer: `Promise<${resource}>`, mode: 'body' }];
    }
    case 'batchCreate': {
      // A shared field may be left out of each request: the top-level one fills it.
      const { shared } = r!.batchCreate!;
      const fields = Object.fromEntries(
        Object.entries(r!.fields).map(([name, f]) => [name, shared.includes(name) ? { ...f, required: false } : f]),
      );
      const request = shape([
        'parent: string',
        `requests: Array<{ parent?: string; ${batchItemName(r!)}: ${input(fields)} }>`,
        ...shared.map((name) => `${propertyName(name)}?: string`),
      ]);
      const answer = `Promise<{ ${r!.collection}: ${resource}[] }>`;
      return [{ name: `batchCreate${cap(r!.collection)}`, request, answer, mode: 'asBody' }];
    }
    case 'batchDelete':
      return [
        {
          name: `batchDelete${cap(r!.collection)}`,
          request: '{ parent: string; names: string[] }',
          answer: `Promise<{ ${r!.collection}: ${resource}[]; parent: string }>`,
          mode: 'asBody',
        },
      ];
    case 'update': {
      const request = shape([...pathMembers(route), `body: Partial<${input()}>`, 'updateMask?: string']);
      return [{ name: `update${r!.type}`, request, answer: `Promise<${resource}>`, mode: 'body' }];
    }
    case 'delete':
      return [{ name: `delete${r!.type}`, request: shape(pathMembers(route)), answer: 'Promise<void>', mode: 'none' }];
    case 'subresourceGet':
    case 'subresourceUpdate': {
      const s = r!.subresources.find((x) => x.name === route.subresource)!;
      const answer = `Promise<{ uid: string } & ${objectType(s.fields, false, 'resource')}>`;
      if (route.kind === 'subresourceGet')
        return [{ name: `get${s.type}`, request: shape(pathMembers(route)), answer, mode: 'body' }];
      const request = shape([...pathMembers(route), `body: ${input(s.fields)}`]);
      return [{ name: `update${s.type}`, request, answer, mode: 'body' }];
    }
    case 'endpoint': {
      const e = route.endpoint!;
      const { request, response } = endpointTypes(e, 'input');
      types.push(
        `export type ${cap(e.name)}Request = ${request};`,
        `export type ${cap(e.name)}Response = ${response};`,
      );
      return [
        { name: e.name, request: `${cap(e.name)}Request`, answer: `Promise<${cap(e.name)}Response>`, mode: 'body' },
      ];
    }
  }
}

/** The client's type name from the API's title: Platform API -> PlatformClient. */
const clientName = (model: ApiModel) =>
  `${model.title
    .replace(/\bAPI\b/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map(cap)
    .join('')}Client`;

/** A package name from the API's title: Platform API -> platform-api-client. */
const packageName = (model: ApiModel) =>
  `${model.title
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .join('-')}-client`;

/** dist/: each source as ESM JavaScript and its declarations, made without a program (isolated declarations). */
function compiled(sources: Record<string, string>, banner: string): Record<string, string> {
  const out: Record<string, string> = {};
  const compilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, removeComments: false };
  for (const [name, text] of Object.entries(sources)) {
    const base = name.replace(/\.ts$/, '');
    // The sources' first lines, kept, say the files are generated.
    out[`dist/${base}.js`] = ts.transpileModule(text, { compilerOptions, fileName: name }).outputText;
    const d = ts.transpileDeclaration(text, { compilerOptions, fileName: name, reportDiagnostics: true });
    const problems = (d.diagnostics ?? []).map((x) => ts.flattenDiagnosticMessageText(x.messageText, '\n'));
    if (problems.length) throw new Error(`the client's ${name} needs written-out types: ${problems.join('; ')}`);
    out[`dist/${base}.d.ts`] = `${banner}\n${d.outputText}`;
  }
  return out;
}

/** The files of generated/client/, by path inside it. */
export function emitClient(model: ApiModel, routes: Route[], banner: string): Record<string, string> {
  const byDomain = new Map<string, Method[]>();
  const requestTypes: string[] = [];
  const tables = new Map<Method, string>();
  for (const route of v2Routes(routes)) {
    const domain = route.resource?.domain ?? route.endpoint!.domain;
    const made = methods(route, requestTypes);
    const table = JSON.stringify({ method: route.method, path: route.path, params: route.params });
    for (const m of made) {
      const collection = m.mode === 'items' ? `, collection: ${JSON.stringify(route.resource!.collection)}` : '';
      tables.set(m, `{ route: ${table}, answer: ${JSON.stringify(m.mode)}${collection} }`);
    }
    byDomain.set(domain, [...(byDomain.get(domain) ?? []), ...made]);
  }
  const domains = [...byDomain.keys()].sort();
  const name = clientName(model);
  const group = (d: string, line: (m: Method) => string) =>
    `  ${propertyName(d)}: {\n${byDomain
      .get(d)!
      .map((m) => `    ${line(m)}\n`)
      .join('')}  };`;
  const resources = Object.values(model.resources);
  const typeNames = [
    ...resources.map((r) => `${r.type}Resource`),
    ...requestTypes.map((t) => /^export type (\w+)/.exec(t)![1]),
  ].sort();
  const types = `${banner}
// The resources as the API shows them, and the requests of its operations, as a client may send them.

${resources.map((r) => `export type ${r.type}Resource = ${shape(resourceMembers(r))};`).join('\n')}

${requestTypes.join('\n')}
`;
  const index = `${banner}
import { Client, type ClientOptions, type Operation, type Page } from './engine.js';
import type { ${typeNames.join(', ')} } from './types.js';

export { ApiCallError, type ClientOptions, type ErrorDetail, type FetchLike, type Page } from './engine.js';
export type * from './types.js';

/** A client of ${model.title}: a method per operation, by domain (client.registry.listRepos(...)). */
export interface ${name} {
${domains.map((d) => group(d, (m) => `${m.name}(request${m.optional ? '?' : ''}: ${m.request}): ${m.answer};`)).join('\n')}
}

const operations: Record<string, Record<string, Operation>> = {
${domains.map((d) => group(d, (m) => `${m.name}: ${tables.get(m)},`).replace(/;$/, ',')).join('\n')}
};

/** The client of the API at options.baseUrl. */
export function createClient(options: ClientOptions): ${name} {
  return new Client(options).bind(operations) as unknown as ${name};
}
`;
  const engine = `// Copied by npm run generate from ${engineSource}. Do not edit: changes are lost on the next run.\n${readFileSync(new URL(`../${engineSource}`, import.meta.url), 'utf8')}`;
  const sources = { 'types.ts': types, 'engine.ts': engine, 'index.ts': index };
  const license = model.info.license?.identifier;
  const manifest = {
    // npm's place for a comment in package.json
    '//': banner.slice(3),
    name: packageName(model),
    version: model.info.release,
    description: `The typed client of ${model.title}, generated from its spec`,
    ...(license ? { license } : {}),
    type: 'module',
    engines: { node: '>=20' },
    main: './dist/index.js',
    types: './dist/index.d.ts',
    exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    files: ['dist'],
  };
  return {
    ...sources,
    ...compiled(sources, banner),
    'package.json': `${JSON.stringify(manifest, null, 2)}\n`,
  };
}
