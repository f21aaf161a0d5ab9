// npm run grpc -- [--address HOST:PORT] [--token TOKEN] [--tls] list [SERVICE] | describe SYMBOL | call METHOD JSON:
// a small gRPC command line for where grpcurl is not packaged. Everything it knows of the server comes from
// server reflection (grpc.reflection.v1), as grpcurl's does: no .proto file is needed. Requests and answers are
// proto3 JSON (runtime/grpc/proto-json.ts, the same JSON as HTTP's); an error prints its code, message and
// google.rpc details and exits 1.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { fromJson, jsonName, toJson } from '../runtime/grpc/proto-json.js';
import { readStatusDetails } from '../runtime/grpc/status.js';
import type { Row } from '../runtime/model/records.js';
import { parseCommandLine } from './cli-args.js';

const { values, positionals } = parseCommandLine({
  name: 'grpc',
  usage: `
usage: npm run grpc -- [options] list [SERVICE]
       npm run grpc -- [options] describe SYMBOL
       npm run grpc -- [options] call SERVICE/METHOD ['JSON']
A gRPC client over server reflection (what grpcurl does, where grpcurl is not packaged):
  list                 the services the server serves; with SERVICE, its methods
  describe SYMBOL      a service, method, message or enum by its full name, as .proto text
  call SERVICE/METHOD  calls a unary method with the request in proto3 JSON (default {}) and prints the answer
  --address HOST:PORT  the server (default 127.0.0.1:8080, the HTTP port serves gRPC too)
  --token TOKEN        sent as "authorization: Bearer TOKEN" (npm run -s token prints one)
  --tls                TLS (a server behind a TLS-terminating proxy); default plaintext h2c
Example: npm run grpc -- --token "$(npm run -s token)" call chainguard.platform.registry.v2.ReposService/ListRepos '{"pageSize":2}'`,
  options: {
    address: { type: 'string', default: '127.0.0.1:8080' },
    token: { type: 'string' },
    tls: { type: 'boolean', default: false },
  },
  allowPositionals: true,
});

class CommandError extends Error {}

const credentials = values.tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();

/** What a reflection answer carries (grpc.reflection.v1.ServerReflectionResponse, camelCase). */
interface ReflectionAnswer {
  listServicesResponse?: { service: { name: string }[] };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

type ReflectionClient = grpc.Client & {
  ServerReflectionInfo(metadata: grpc.Metadata): grpc.ClientDuplexStream<object, ReflectionAnswer>;
};

/** A stream of reflection requests on one connection: each question answered in turn. */
function reflection() {
  const require = createRequire(import.meta.url);
  const proto = join(dirname(require.resolve('@grpc/reflection')), '../proto/grpc/reflection/v1/reflection.proto');
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(proto, { keepCase: false, oneofs: true }));
  const reflectionPackage = (loaded.grpc as grpc.GrpcObject).reflection as unknown as {
    v1: { ServerReflection: new (address: string, credentials: grpc.ChannelCredentials) => ReflectionClient };
  };
  const client = new reflectionPackage.v1.ServerReflection(values.address, credentials);
  const metadata = new grpc.Metadata();
  if (values.token) metadata.set('authorization', `Bearer ${values.token}`);
  const stream = client.ServerReflectionInfo(metadata);
  const waiting: { resolve: (v: ReflectionAnswer) => void; reject: (e: Error) => void }[] = [];
  stream.on('data', (answer: ReflectionAnswer) => waiting.shift()?.resolve(answer));
  stream.on('error', (e: Error) => {
    for (const w of waiting.splice(0)) w.reject(e);
  });
  const ask = (question: object): Promise<ReflectionAnswer> =>
    new Promise((resolve, reject) => {
      waiting.push({ resolve, reject });
      stream.write({ host: '', ...question });
    });
  return {
    async services(): Promise<string[]> {
      const answer = await ask({ listServices: '*' });
      return (answer.listServicesResponse?.service ?? []).map((s) => s.name).sort();
    },
    /** The types of the file declaring the symbol, and of every file it imports. */
    async rootOf(symbol: string): Promise<protobuf.Root> {
      const answer = await ask({ fileContainingSymbol: symbol });
      if (answer.errorResponse) throw new CommandError(`${symbol}: ${answer.errorResponse.errorMessage}`);
      const files = (answer.fileDescriptorResponse?.fileDescriptorProto ?? []).map((bytes) =>
        descriptor.FileDescriptorProto.decode(bytes),
      );
      // protobufjs/ext/descriptor adds fromDescriptor to Root; its types do not say so.
      const root = (protobuf.Root as unknown as { fromDescriptor(set: object): protobuf.Root }).fromDescriptor({
        file: files,
      });
      root.resolveAll();
      return root;
    },
    close() {
      stream.end();
      client.close();
    },
  };
}

/** A field as .proto text: label, type, name and number. */
function fieldText(f: protobuf.Field): string {
  const type = f instanceof protobuf.MapField ? `map<${f.keyType}, ${f.type}>` : f.type;
  const label =
    f.repeated && !(f instanceof protobuf.MapField) ? 'repeated ' : f.options?.proto3_optional ? 'optional ' : '';
  return `${label}${type} ${f.name} = ${f.id};`;
}

/** A symbol as .proto text. */
function describe(found: protobuf.ReflectionObject): string {
  if (found instanceof protobuf.Service)
    return `service ${found.fullName.slice(1)} {\n${found.methodsArray.map((m) => `  ${methodText(m)}\n`).join('')}}`;
  if (found instanceof protobuf.Method) return methodText(found);
  if (found instanceof protobuf.Type) {
    const oneofs = new Map(
      found.oneofsArray.filter((o) => !o.name.startsWith('_')).flatMap((o) => o.fieldsArray.map((f) => [f, o.name])),
    );
    const lines = found.fieldsArray.map((f) => `  ${fieldText(f)}${oneofs.has(f) ? ` // oneof ${oneofs.get(f)}` : ''}`);
    return `message ${found.fullName.slice(1)} {\n${lines.map((l) => `${l}\n`).join('')}}`;
  }
  if (found instanceof protobuf.Enum)
    return `enum ${found.fullName.slice(1)} {\n${Object.entries(found.values)
      .map(([n, v]) => `  ${n} = ${v};\n`)
      .join('')}}`;
  throw new CommandError(`${found.fullName.slice(1)} is not a service, method, message or enum`);
}

function methodText(m: protobuf.Method): string {
  const stream = (yes: boolean | undefined) => (yes ? 'stream ' : '');
  return `rpc ${m.name}(${stream(m.requestStream)}.${m.resolvedRequestType!.fullName.slice(1)}) returns (${stream(m.responseStream)}.${m.resolvedResponseType!.fullName.slice(1)});`;
}

/** SERVICE/METHOD or SERVICE.METHOD: the service's full name and the method's. */
function methodName(text: string): [string, string] {
  const m = /^\.?([\w.]+)[/.](\w+)$/.exec(text);
  if (!m) throw new CommandError(`"${text}" is not SERVICE/METHOD, e.g. chainguard.platform.ping.v1.PingService/Ping`);
  return [m[1], m[2]];
}

/** Calls a unary method: the request from JSON, the answer as JSON; an error as its status and details. */
async function call(root: protobuf.Root, service: string, name: string, text: string): Promise<Row> {
  const method = root.lookupService(service).methods[name];
  if (!method) throw new CommandError(`${service} has no method ${name}`);
  if (method.requestStream || method.responseStream)
    throw new CommandError(`${service}/${name} streams: not supported`);
  let json: Row;
  try {
    json = JSON.parse(text) as Row;
  } catch (e) {
    throw new CommandError(`the request is not JSON: ${(e as Error).message}`);
  }
  const type = method.resolvedRequestType!;
  const known = new Set(type.fieldsArray.flatMap((f) => [f.name, jsonName(f)]));
  const unknown = Object.keys(json).filter((k) => !known.has(k));
  if (unknown.length)
    throw new CommandError(`${type.name} has no field ${unknown.join(', ')}; see describe ${type.fullName.slice(1)}`);
  const answerType = method.resolvedResponseType!;
  const client = new grpc.Client(values.address, credentials);
  const metadata = new grpc.Metadata();
  if (values.token) metadata.set('authorization', `Bearer ${values.token}`);
  try {
    const answer = await new Promise<protobuf.Message>((resolve, reject) =>
      client.makeUnaryRequest(
        `/${service}/${name}`,
        (request: Row) => Buffer.from(type.encode(type.fromObject(fromJson(type, request))).finish()),
        (bytes: Buffer) => answerType.decode(bytes),
        json,
        metadata,
        (error, value) => (error ? reject(error) : resolve(value!)),
      ),
    );
    return toJson(answerType, answerType.toObject(answer, { longs: String, enums: String, bytes: String }) as Row);
  } finally {
    client.close();
  }
}

/** A gRPC error as grpcurl shows one: its code's name, message and details. */
function failure(e: grpc.ServiceError): string {
  const bin = e.metadata?.get('grpc-status-details-bin')[0];
  const details = bin ? readStatusDetails(bin as Buffer).details : [];
  const lines = [`ERROR:\n  Code: ${grpc.status[e.code]}\n  Message: ${e.details}`];
  if (details.length) lines.push(`  Details:\n${JSON.stringify(details, null, 2).replace(/^/gm, '    ')}`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const [command, argument, request] = positionals;
  if (!['list', 'describe', 'call'].includes(command ?? ''))
    throw new CommandError('say list, describe SYMBOL or call SERVICE/METHOD JSON');
  const server = reflection();
  try {
    if (command === 'list' && !argument) return void console.log((await server.services()).join('\n'));
    if (!argument) throw new CommandError(`${command} needs ${command === 'call' ? 'SERVICE/METHOD' : 'a symbol'}`);
    if (command === 'list') {
      const found = (await server.rootOf(argument)).lookupService(argument);
      return void console.log(found.methodsArray.map((m) => `${argument}.${m.name}`).join('\n'));
    }
    if (command === 'describe') {
      const found = (await server.rootOf(argument)).lookup(argument);
      if (!found) throw new CommandError(`${argument}: not found`);
      return void console.log(describe(found));
    }
    const [service, name] = methodName(argument);
    console.log(JSON.stringify(await call(await server.rootOf(service), service, name, request ?? '{}'), null, 2));
  } finally {
    server.close();
  }
}

main().catch((e: unknown) => {
  if (e instanceof CommandError) console.error(`grpc: ${e.message}`);
  else if (typeof (e as grpc.ServiceError).code === 'number' && 'details' in (e as object))
    console.error(failure(e as grpc.ServiceError));
  else console.error(`grpc: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
