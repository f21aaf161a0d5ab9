// Prints the gRPC surface (proto-model.ts) as .proto files, one per package, and generated/grpc.ts, the table that
// wires each rpc to the one pipeline as generated/routes.ts wires each HTTP route.
import type { ApiModel, ProtoReserved } from '../runtime/model/api-model.js';
import type { RpcRoute, V1RpcRoute } from '../runtime/grpc/rpc.js';
import { cap } from './emit-openapi.js';
import { banner, endpointHandler, hooks, platformRuntime } from './emit-typescript.js';
import type { ProtoEnumDecl, ProtoFieldDecl, ProtoMessageDecl, ProtoSurface } from './proto-model.js';

const wellKnown: Record<string, string> = {
  'google.protobuf.Timestamp': 'google/protobuf/timestamp.proto',
  'google.protobuf.Duration': 'google/protobuf/duration.proto',
  'google.protobuf.FieldMask': 'google/protobuf/field_mask.proto',
  'google.protobuf.Empty': 'google/protobuf/empty.proto',
};

/** chainguard.platform.registry.v2 -> chainguard/platform/registry/v2/registry.proto */
export function protoFile(pkg: string): string {
  const parts = pkg.split('.');
  const name = parts.filter((p) => !/^v\d/.test(p)).pop();
  return `${parts.join('/')}/${name}.proto`;
}

const packageOf = (name: string) =>
  name
    .split('.')
    .filter((p) => /^[a-z]/.test(p))
    .join('.');

function fieldLine(f: ProtoFieldDecl, indent: string): string {
  const type = f.mapKey ? `map<${f.mapKey}, ${typeRef(f.type)}>` : typeRef(f.type);
  const label = f.label ? `${f.label} ` : '';
  const json = f.jsonName ? ` [json_name = "${f.jsonName}"]` : '';
  return `${indent}${label}${type} ${f.name} = ${f.number}${json};`;
}

const typeRef = (t: string) => (t.includes('.') ? `.${t}` : t);

class FilePrinter {
  readonly lines: string[] = [];
  readonly imports = new Set<string>();

  constructor(
    private readonly surface: ProtoSurface,
    private readonly pkg: string,
  ) {}

  private use(type: string): void {
    if (wellKnown[type]) this.imports.add(wellKnown[type]);
    else if (type.includes('.') && packageOf(type) !== this.pkg) this.imports.add(protoFile(packageOf(type)));
  }

  private children(parent: string) {
    const nested = (name: string) => name.startsWith(`${parent}.`) && !name.slice(parent.length + 1).includes('.');
    return {
      messages: [...this.surface.messages.values()].filter((m) => nested(m.name)),
      enums: [...this.surface.enums.values()].filter((e) => nested(e.name)),
    };
  }

  enumDecl(e: ProtoEnumDecl, indent: string): void {
    this.lines.push(`${indent}enum ${e.name.split('.').pop()} {`);
    for (const v of e.values) this.lines.push(`${indent}  ${v.name} = ${v.number};`);
    this.reserved(e.reserved, `${indent}  `);
    this.lines.push(`${indent}}`);
  }

  /** What a removed field or value had: its number, and its name while nothing has it again. */
  private reserved(reserved: ProtoReserved | undefined, indent: string): void {
    const numbers = [...(reserved?.numbers ?? []), ...(reserved?.ranges ?? []).map(([a, b]) => `${a} to ${b}`)];
    if (numbers.length) this.lines.push(`${indent}reserved ${numbers.join(', ')};`);
    if (reserved?.names?.length)
      this.lines.push(`${indent}reserved ${reserved.names.map((n) => `"${n}"`).join(', ')};`);
  }

  message(m: ProtoMessageDecl, indent: string): void {
    this.lines.push(`${indent}message ${m.name.split('.').pop()} {`);
    const inner = `${indent}  `;
    const { messages, enums } = this.children(m.name);
    for (const e of enums) this.enumDecl(e, inner);
    for (const n of messages) this.message(n, inner);
    const oneofs = new Set<string>();
    for (const f of m.fields) {
      this.use(f.type);
      if (!f.oneof) this.lines.push(fieldLine(f, inner));
      else if (!oneofs.has(f.oneof)) {
        oneofs.add(f.oneof);
        this.lines.push(`${inner}oneof ${f.oneof} {`);
        for (const g of m.fields.filter((x) => x.oneof === f.oneof)) this.lines.push(fieldLine(g, `${inner}  `));
        this.lines.push(`${inner}}`);
      }
    }
    this.reserved(m.reserved, inner);
    this.lines.push(`${indent}}`);
  }

  print(): string {
    const { messages, enums } = this.children(this.pkg);
    for (const e of enums) this.enumDecl(e, '');
    for (const m of messages) this.message(m, '');
    const services = new Map<string, string[]>();
    for (const r of this.surface.rpcs.filter((x) => packageOf(x.service) === this.pkg)) {
      this.use(r.request);
      this.use(r.response);
      const lines = services.get(r.service) ?? services.set(r.service, []).get(r.service)!;
      lines.push(`  rpc ${r.name}(${typeRef(r.request)}) returns (${typeRef(r.response)});`);
    }
    for (const [name, rpcs] of services) this.lines.push(`service ${name.split('.').pop()} {`, ...rpcs, '}');
    const head = [
      `// ${banner.slice(3)}`,
      'syntax = "proto3";',
      '',
      `package ${this.pkg};`,
      '',
      ...[...this.imports].sort().map((i) => `import "${i}";`),
    ];
    return `${[...head, ...(this.imports.size ? [''] : []), ...this.lines].join('\n')}\n`;
  }
}

/** One .proto file per package, by path below generated/proto/. */
export function emitProtoFiles(surface: ProtoSurface): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pkg of [...surface.packages].sort()) out[protoFile(pkg)] = new FilePrinter(surface, pkg).print();
  return out;
}

/** generated/grpc.ts: every rpc by its :path, calling the runtime with the route of its fields. */
export function emitGrpcTable(model: ApiModel, surface: ProtoSurface, runtime = platformRuntime): string {
  const lines = surface.rpcs
    .filter((rpc) => !rpc.external && !rpc.v1)
    .map((rpc) => {
      const route: RpcRoute = {
        path: rpc.path,
        request: rpc.request,
        response: rpc.response,
        fields: rpc.fields,
        ...(rpc.bodyMessage ? { bodyMessage: rpc.bodyMessage } : {}),
      };
      const json = JSON.stringify(route);
      const key = JSON.stringify(rpc.path);
      if (rpc.kind === 'endpoint') {
        const e = rpc.endpoint!;
        return `    ${key}: ops.endpoint(apiModel.endpoints[${model.endpoints.indexOf(e)}], ${json}, ${endpointHandler(e)}),`;
      }
      const r = rpc.resource!;
      const sub = rpc.subresource ? `, ${JSON.stringify(rpc.subresource)}` : hooks(r, rpc.kind);
      return `    ${key}: ops.${rpc.kind}(apiModel.resources.${r.collection}, ${json}${sub}),`;
    });
  const v1: V1RpcRoute[] = surface.rpcs
    .filter((r) => r.v1)
    .map((r) => ({ path: r.path, request: r.request, response: r.response, v1: r.v1! }));
  const endpoints = [...new Set(surface.rpcs.filter((r) => r.endpoint).map((r) => `${cap(r.endpoint!.name)}Request`))];
  const typed = new Set<string>();
  for (const r of surface.rpcs) {
    const res = r.resource;
    if (!res || r.subresource) continue;
    if (res.presenter && r.kind !== 'delete') typed.add(`${res.type}Resource`);
    if (res.onCreate && r.kind === 'create') typed.add(`${res.type}Record`);
  }
  return [
    banner,
    `import type { RpcMethod, RpcOperations, V1RpcRoute } from '${runtime}';`,
    "import { apiModel } from './model.js';",
    `import type { Handlers${endpoints.map((n) => `, ${n}`).join('')} } from './routes.js';`,
    ...(typed.size ? [`import type { ${[...typed].sort().join(', ')} } from './types.js';`] : []),
    '',
    '/** Every rpc of the API by its :path; each runs the one pipeline as its HTTP route does. */',
    'export function createRpcTable(ops: RpcOperations, handlers: Handlers): Record<string, RpcMethod> {',
    '  return {',
    ...lines,
    '  };',
    '}',
    '',
    '/** Every v1 rpc and the v1 HTTP route it is transcoded to (runtime/grpc/v1.ts). */',
    'export const v1Rpcs: V1RpcRoute[] = [',
    ...v1.map((r) => `  ${JSON.stringify(r)},`),
    '];',
    '',
    '/** The v1 rpcs not served: each answers a structured UNIMPLEMENTED. */',
    `export const v1Unimplemented: string[] = ${JSON.stringify(surface.v1Unimplemented)};`,
    '',
  ].join('\n');
}
