// The gRPC server (grpc-js): every rpc of generated/grpc.ts served from the generated .proto files, with bearer
// tokens from the authorization metadata, AIP-193 errors with grpc-status-details-bin, and server reflection.
// It reads and writes bytes itself so that a malformed message is INVALID_ARGUMENT, never grpc-js's INTERNAL.
import type { Duplex } from 'node:stream';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import type { Principal } from '../access/authorization.js';
import { bearerToken } from '../access/bearer-token.js';
import { ApiError, internal, unauthenticated } from '../model/errors.js';
import type { Row } from '../model/records.js';
import type { RpcMethod } from './operations.js';
import { decodeRequest, encodeResponse, jsonName } from './proto-json.js';
import { loadProtoRoot, protoFiles } from './proto-root.js';
import { statusDetails } from './status.js';
import type { RateLimit } from '../operate/rate-limit.js';
import type { GrpcLimits } from '../operate/config.js';
import { callerAddress, type TrustedProxies } from '../operate/caller-address.js';

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
  /** the proxies whose x-forwarded-for names an anonymous caller's address */
  trustedProxies?: TrustedProxies;
  /** idle, age, keepalive, stream and memory limits of each connection */
  limits: GrpcLimits;
  /** an rpc's request must arrive whole (its stream half-closed) within this many ms, as HTTP's REQUEST_TIMEOUT */
  requestTimeoutMs: number;
}

/** The address a call comes from: its peer, or what a trusted proxy says (as over HTTP). */
function addressOf(call: grpc.ServerUnaryCall<Buffer, Buffer>, proxies: TrustedProxies | undefined): string {
  const forwarded = call.metadata.get('x-forwarded-for').map(String).join(',');
  return callerAddress(call.getPeer().replace(/:\d+$/, ''), forwarded || undefined, proxies);
}

/** Takes a token from a bucket, or refuses the call with RESOURCE_EXHAUSTED. */
export interface GrpcServer {
  /** serves one connection that opened with the HTTP/2 preface (the HTTP port's) */
  inject(socket: Duplex): void;
  /** serves gRPC alone on a port of its own; answers the port bound */
  listen(host: string, port: number): Promise<number>;
  /** asks every connection to finish its rpcs and go away; those still open after graceMs are cut */
  close(graceMs: number): Promise<void>;
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
  const token = bearerToken(String(value));
  if (token === undefined) throw unauthenticated('the authorization metadata must be "Bearer <token>"');
  return token;
}

async function principalOf(metadata: grpc.Metadata, authenticate: GrpcOptions['authenticate']): Promise<Principal> {
  const token = bearerOf(metadata);
  return token === undefined ? {} : authenticate(token);
}

/**
 * A request announced and never finished would hold its stream (and keep its connection from idling) until the
 * connection's age: it gets the time an HTTP request gets, then INVALID_ARGUMENT, as HTTP's 408.
 */
function requestDeadline({ Metadata, ServerInterceptingCall }: typeof grpc, o: GrpcOptions): grpc.ServerInterceptor {
  return (_method, call) => {
    let timer: NodeJS.Timeout | undefined;
    const late = () => {
      const error = new ApiError('INVALID_ARGUMENT', 'Invalid argument: the request did not arrive in time');
      const metadata = new Metadata();
      metadata.set('grpc-status-details-bin', statusDetails(error, o.errorDomain('api')));
      call.sendStatus({ code: error.code, details: error.message, metadata });
    };
    return new ServerInterceptingCall(call, {
      start: (next) => {
        timer = setTimeout(late, o.requestTimeoutMs);
        next({
          onReceiveHalfClose: (go) => {
            clearTimeout(timer);
            go();
          },
          onCancel: () => clearTimeout(timer),
        });
      },
      sendStatus: (status, go) => {
        clearTimeout(timer);
        go(status);
      },
    });
  };
}

/**
 * Who calls, and the call counted against their bucket. The token exchange reads its bearer (another issuer's
 * token) itself; every other rpc is authenticated by it, and a refused token costs the caller's address a call,
 * as over HTTP: forging tokens is limited too.
 */
async function callerOf(
  method: RpcMethod,
  call: grpc.ServerUnaryCall<Buffer, Buffer>,
  o: GrpcOptions,
): Promise<{ principal: Principal; bearer?: string }> {
  const { rateLimit } = o;
  const address = () => `address ${addressOf(call, o.trustedProxies)}`;
  const bearer = method.readsBearer ? bearerOf(call.metadata) : undefined;
  if (method.readsBearer && bearer === undefined)
    throw unauthenticated('present the upstream OIDC token as the authorization metadata "Bearer <token>"');
  const principal = method.readsBearer
    ? {}
    : await principalOf(call.metadata, o.authenticate).catch((e: unknown) => {
        if (rateLimit && e instanceof ApiError && e.codeName === 'UNAUTHENTICATED') rateLimit.require(address());
        throw e;
      });
  rateLimit?.require(principal.subject ? `identity ${principal.subject}` : address());
  return { principal, bearer };
}

/**
 * The grpc-js server with every rpc and reflection, and the injector the HTTP port hands connections to. grpc-js,
 * proto-loader and reflection are loaded with it, not with the server (about 50 ms of a start).
 */
async function setUp(o: GrpcOptions) {
  const [grpcJs, protoLoader, { ReflectionService }] = await Promise.all([
    import('@grpc/grpc-js'),
    import('@grpc/proto-loader'),
    import('@grpc/reflection'),
  ]);
  const { Server, Metadata, ServerCredentials } = grpcJs;
  const root = loadProtoRoot(o.generatedDir);
  const { limits } = o;
  const server = new Server({
    'grpc.max_receive_message_length': o.maxMessageBytes,
    'grpc.max_send_message_length': -1,
    // grpc-js keeps a connection forever unless told: an idle one, a long-lived one, one that no longer answers.
    'grpc.max_connection_idle_ms': limits.idleMs,
    'grpc.max_connection_age_ms': limits.maxAgeMs,
    'grpc.max_connection_age_grace_ms': limits.maxAgeGraceMs,
    'grpc.keepalive_time_ms': limits.keepaliveMs,
    'grpc.keepalive_timeout_ms': limits.keepaliveTimeoutMs,
    'grpc.max_concurrent_streams': limits.maxStreams,
    // grpc-js turns Node's session memory check off unless given this (its name is grpc-node's, not grpc's).
    'grpc-node.max_session_memory': limits.sessionMemoryMb,
    interceptors: [requestDeadline(grpcJs, o)],
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
      const { principal, bearer } = await callerOf(method, call, o);
      caller.subject = principal.subject;
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
  let closing = false;
  return {
    inject: (socket) => {
      // A connection handed over once a shutdown began (it was still being told apart) is not served.
      if (closing) return void socket.destroy();
      // The HTTP server lets a peer half-close (allowHalfOpen): a connection whose peer has ended would stay open,
      // its rpc waiting for a message that cannot come. HTTP/2 never half-closes, so its end is its last word.
      if (socket.readableEnded) return void socket.destroy();
      socket.once('end', () => socket.destroy());
      // Until the server takes the connection (its first bytes wait, read and put back by same-port.ts), and
      // after, a reset must not be an unhandled error.
      socket.on('error', () => socket.destroy());
      ready().then(
        ({ injector }) => (closing ? socket.destroy() : injector.injectConnection(socket)),
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
    close: async (graceMs) => {
      closing = true;
      const set = await settingUp?.catch(() => undefined);
      if (!set) return;
      // GOAWAY to every connection; tryShutdown waits for their rpcs to finish, forceShutdown cuts them. The
      // sockets under them are the HTTP port's to cut as well (runtime/http/listener.ts, closeWithin).
      let grace: NodeJS.Timeout | undefined;
      const cut = new Promise<void>((resolve) => (grace = setTimeout(resolve, graceMs)));
      set.injector.drain(graceMs);
      set.injector.destroy();
      await Promise.race([new Promise<void>((resolve) => set.server.tryShutdown(() => resolve())), cut]);
      clearTimeout(grace);
      set.server.forceShutdown();
    },
  };
}
