// The gRPC server (grpc-js): every rpc of generated/grpc.ts served from the generated .proto files, with bearer
// tokens from the authorization metadata, AIP-193 errors with grpc-status-details-bin, and server reflection.
// It reads and writes bytes itself so that a malformed message is INVALID_ARGUMENT, never grpc-js's INTERNAL.
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import type { Principal } from '../authorization.js';
import { ApiError, internal, unauthenticated } from '../errors.js';
import type { Row } from '../records.js';
import type { RpcMethod } from './operations.js';
import { decodeRequest, encodeResponse, jsonName } from './proto-json.js';
import { loadProtoRoot, protoFiles } from './proto-root.js';
import { statusDetails } from './status.js';
import { rateLimited, type RateLimit } from '../rate-limit.js';

export interface GrpcOptions {
  generatedDir: string;
  /** every rpc by its :path (generated/grpc.ts) */
  rpcs: Record<string, RpcMethod>;
  authenticate(token: string): Principal | Promise<Principal>;
  /** <domain>.<service>.dev */
  errorDomain(domain: string): string;
  log(line: Record<string, unknown>): void;
  /** the largest request message accepted, as the HTTP body limit */
  maxMessageBytes: number;
  /** each rpc answered: its path, its status code's name and its time */
  finished?(rpc: string, code: string, seconds: number): void;
  /** the same buckets as HTTP's: a caller is limited across both transports */
  rateLimit?: RateLimit;
}

/** The caller's bucket: its identity when known, else the address it calls from (as over HTTP). */
function limit(rateLimit: RateLimit, principal: Principal, peer: string): void {
  const who = principal.subject ? `identity ${principal.subject}` : `address ${peer.replace(/:\d+$/, '')}`;
  const wait = rateLimit.take(who);
  if (wait > 0) throw rateLimited(who, rateLimit.perSecond, wait);
}

export interface GrpcServer {
  /** serves one connection that opened with the HTTP/2 preface (the HTTP port's) */
  inject(socket: Duplex): void;
  /** serves gRPC alone on a port of its own; answers the port bound */
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

const passThrough = (b: Buffer) => b;

/** update_mask paths name proto fields (sync_config.source); the pipeline's mask names JSON fields. */
function maskToJson(type: protobuf.Type, mask: string): string {
  return mask
    .split(',')
    .map((path) => {
      let t: protobuf.Type | undefined = type;
      return path
        .split('.')
        .map((segment) => {
          // Own fields only: a path of __proto__ or constructor names no field.
          const f = t && Object.hasOwn(t.fields, segment) ? t.fields[segment] : undefined;
          t = f?.resolvedType && 'fieldsArray' in f.resolvedType ? (f.resolvedType as protobuf.Type) : undefined;
          return f ? jsonName(f) : segment;
        })
        .join('.');
    })
    .join(',');
}

/** The bearer token of the authorization metadata, if any. */
function bearerOf(metadata: grpc.Metadata): string | undefined {
  // Node's HTTP/2 keeps the first of repeated values, as its HTTP/1.1 does: the same caller on both.
  const [value] = metadata.get('authorization');
  if (value === undefined) return undefined;
  const m = /^Bearer +([^\s]+) *$/i.exec(String(value));
  if (!m) throw unauthenticated('the authorization metadata must be "Bearer <token>"');
  return m[1];
}

async function principalOf(metadata: grpc.Metadata, authenticate: GrpcOptions['authenticate']): Promise<Principal> {
  const token = bearerOf(metadata);
  return token === undefined ? {} : authenticate(token);
}

/**
 * The grpc-js server with every rpc and reflection, and the injector the HTTP port hands connections to. grpc-js,
 * proto-loader and reflection are loaded with it, not with the server (about 50 ms of a start).
 */
async function setUp(o: GrpcOptions) {
  const [{ Server, Metadata, ServerCredentials }, protoLoader, { ReflectionService }] = await Promise.all([
    import('@grpc/grpc-js'),
    import('@grpc/proto-loader'),
    import('@grpc/reflection'),
  ]);
  const root = loadProtoRoot(o.generatedDir);
  const server = new Server({
    'grpc.max_receive_message_length': o.maxMessageBytes,
    'grpc.max_send_message_length': -1,
  });
  type Definition = Record<string, grpc.MethodDefinition<Buffer, Buffer>>;
  const services = new Map<string, { definition: Definition; implementation: grpc.UntypedServiceImplementation }>();

  for (const [path, method] of Object.entries(o.rpcs)) {
    const [, service, name] = /^\/([^/]+)\/([^/]+)$/.exec(path)!;
    const requestType = root.lookupType(method.route.request);
    const responseType = root.lookupType(method.route.response);
    const bodyType = method.route.bodyMessage ? root.lookupType(method.route.bodyMessage) : undefined;
    const entry = services.get(service) ?? services.set(service, { definition: {}, implementation: {} }).get(service)!;
    entry.definition[name] = {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: passThrough,
      requestDeserialize: passThrough,
      responseSerialize: passThrough,
      responseDeserialize: passThrough,
      originalName: name,
    };
    const handle = async (call: grpc.ServerUnaryCall<Buffer, Buffer>, caller: Principal): Promise<Buffer> => {
      // The token exchange reads its bearer (another issuer's token) itself; every other rpc is authenticated by it.
      const bearer = method.readsBearer ? bearerOf(call.metadata) : undefined;
      if (method.readsBearer && bearer === undefined)
        throw unauthenticated('present the upstream OIDC token as the authorization metadata "Bearer <token>"');
      const principal = method.readsBearer ? {} : await principalOf(call.metadata, o.authenticate);
      caller.subject = principal.subject;
      if (o.rateLimit) limit(o.rateLimit, principal, call.getPeer());
      const request: Row = decodeRequest(requestType, call.request);
      if (bodyType && typeof request.updateMask === 'string')
        request.updateMask = maskToJson(bodyType, request.updateMask);
      return encodeResponse(responseType, await method.run(request, principal, bearer));
    };
    entry.implementation[name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const started = performance.now();
      const caller: Principal = {};
      /** One line per call, as HTTP's: level by outcome, the rpc, the caller and, for a failure, the reason. */
      const done = (level: string, status: string, extra: Record<string, unknown> = {}) => {
        const seconds = (performance.now() - started) / 1000;
        o.finished?.(path, status, seconds);
        o.log({
          level,
          grpc: path,
          status,
          ms: Math.round(seconds * 1000),
          ...(caller.subject ? { identity: caller.subject } : {}),
          ...extra,
        });
      };
      handle(call, caller).then(
        (answer) => {
          done('info', 'OK');
          callback(null, answer);
        },
        (e: unknown) => {
          const error = e instanceof ApiError ? e : internal();
          if (!(e instanceof ApiError))
            done('error', error.codeName, { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
          else done(error.status() >= 500 ? 'error' : 'warn', error.codeName, { reason: error.codeName });
          const metadata = new Metadata();
          metadata.set('grpc-status-details-bin', statusDetails(error, o.errorDomain(method.domain)));
          callback({ code: error.code, details: error.message, metadata });
        },
      );
    };
  }
  for (const { definition, implementation } of services.values()) server.addService(definition, implementation);

  const dir = join(o.generatedDir, 'proto');
  const definitions = protoLoader.loadSync(protoFiles(dir), { includeDirs: [dir], keepCase: true });
  new ReflectionService(definitions).addToServer(server);

  const credentials = ServerCredentials.createInsecure();
  return { server, credentials, injector: server.createConnectionInjector(credentials) };
}

export function createGrpcServer(o: GrpcOptions): GrpcServer {
  // Set up on first use (the first gRPC connection, or GRPC_PORT): loading grpc-js, reading the .proto files and
  // indexing them for reflection take about 0.25 s, which a start need not wait for.
  let settingUp: ReturnType<typeof setUp> | undefined;
  const ready = () => (settingUp ??= setUp(o));
  return {
    inject: (socket) => {
      // Until the server takes the connection (its first bytes wait, read and put back by same-port.ts), a reset
      // must not be an unhandled error.
      const waiting = () => socket.destroy();
      socket.on('error', waiting);
      ready().then(
        ({ injector }) => {
          socket.off('error', waiting);
          injector.injectConnection(socket);
        },
        (e: unknown) => {
          // A set-up that fails (a .proto the generator got wrong) refuses connections, not the HTTP port.
          o.log({ level: 'error', grpc: 'set-up', error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
          socket.destroy();
        },
      );
    },
    listen: async (host, port) => {
      const { server, credentials } = await ready();
      return new Promise((resolve, reject) =>
        server.bindAsync(`${host.includes(':') ? `[${host}]` : host}:${port}`, credentials, (e, bound) =>
          e ? reject(e) : resolve(bound),
        ),
      );
    },
    close: async () => {
      const set = await settingUp?.catch(() => undefined);
      if (!set) return;
      set.injector.destroy();
      await new Promise<void>((resolve) => set.server.tryShutdown(() => resolve()));
    },
  };
}
