// Proxies in front of a server that plant one defect of the catalogue (conformance/defects.ts) at a time, switched
// between runs without a restart: HTTP forwards requests, gRPC forwards every rpc of the generated protos. Each
// shows the defect the call and the answer as the same JSON on either protocol (a defect may change the call, its
// token too); with no defect planted, or one that leaves a call alone, the bytes pass through as they came.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { statusOf } from '../../conformance/client.js';
import type { Answer, Call, Defect } from '../../conformance/defects.js';
import type { ConformancePlan } from '../../conformance/plan.js';
import { decodeRequest, encodeResponse } from '../../runtime/grpc/proto-json.js';
import { loadProtoRoot } from '../../runtime/grpc/proto-root.js';
import { encodeStatus, readStatusDetails } from '../../runtime/grpc/status.js';

export interface DefectProxy {
  url: string;
  /** the defect answering from now on; none: pass everything through */
  plant(defect?: Defect): void;
  close(): Promise<void>;
}

const rpcName = (path?: string) => path?.slice(path.lastIndexOf('/') + 1);

/** The plan's rpc of an HTTP route, with the route's path parameters. */
function routeOf(plan: ConformancePlan, method: string, path: string) {
  for (const rpc of plan.rpcs) {
    const m = rpc.method === method ? new RegExp(rpc.pattern).exec(path) : null;
    if (m) return { rpc, params: Object.fromEntries(rpc.params.map((p, i) => [p, decodeURIComponent(m[i + 1])])) };
  }
  return undefined;
}

function parsed(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export async function httpDefectProxy(target: string, plan: ConformancePlan): Promise<DefectProxy> {
  let defect: Defect | undefined;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let text = Buffer.concat(chunks).toString();
    let url = req.url!;
    const [pathname, search = ''] = url.split('?');
    const route = routeOf(plan, req.method!, pathname);
    const query = Object.fromEntries(new URLSearchParams(search));
    let call: Call = {
      protocol: 'http',
      rpc: rpcName(route?.rpc.grpc),
      rpcPath: route?.rpc.grpc,
      path: url,
      params: { ...route?.params, ...query },
      resource: parsed(text),
      authorization: req.headers.authorization,
    };
    if (defect?.request) {
      call = defect.request(call);
      const rest = Object.entries(call.params).filter(([k]) => !(route && k in route.params));
      const q = new URLSearchParams(rest.map(([k, v]) => [k, String(v)])).toString();
      url = q ? `${pathname}?${q}` : pathname;
      text =
        call.resource === undefined
          ? ''
          : typeof call.resource === 'string'
            ? call.resource
            : JSON.stringify(call.resource);
    }
    const upstream = await fetch(target + url, {
      method: req.method,
      headers: {
        'content-type': req.headers['content-type'] ?? 'application/json',
        ...(call.authorization ? { authorization: call.authorization } : {}),
      },
      body: text === '' ? undefined : text,
    });
    const answerText = await upstream.text();
    let answer: Answer = {
      status: upstream.status,
      body: parsed(answerText),
      headers: { 'content-type': upstream.headers.get('content-type') ?? 'application/json' },
    };
    if (defect?.answer) answer = defect.answer(answer, call);
    res.writeHead(answer.status, answer.headers);
    res.end(defect?.answer ? (answer.body === undefined ? '' : JSON.stringify(answer.body)) : answerText);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    plant: (d) => (defect = d),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const passThrough = (b: Buffer) => b;

function servicesOf(root: protobuf.NamespaceBase, into: protobuf.Service[] = []): protobuf.Service[] {
  for (const o of root.nestedArray) {
    if ((o as protobuf.Service).methodsArray) into.push(o as protobuf.Service);
    else if ((o as protobuf.Namespace).nestedArray) servicesOf(o as protobuf.Namespace, into);
  }
  return into;
}

/** A gRPC request as a call: the message field holding the resource (the plan's whole-body field) apart. */
function grpcCall(path: string, message: Record<string, any>, body: string | undefined, metadata: grpc.Metadata): Call {
  const { [body ?? '']: resource, ...params } = message;
  const authorization = metadata.get('authorization')[0];
  return {
    protocol: 'grpc',
    rpc: rpcName(path),
    rpcPath: path,
    path,
    params: body ? params : message,
    resource: body ? resource : undefined,
    authorization: authorization === undefined ? undefined : String(authorization),
  };
}

function grpcAnswer(error: grpc.ServiceError | null, bytes: Buffer | undefined, type: protobuf.Type): Answer {
  if (!error) return { status: 200, body: decodeRequest(type, bytes!) };
  const bin = error.metadata?.get('grpc-status-details-bin')[0];
  const body = bin ? readStatusDetails(bin as Buffer) : { code: error.code, message: error.details, details: [] };
  return { status: statusOf[error.code] ?? 500, body };
}

export async function grpcDefectProxy(target: string, plan: ConformancePlan): Promise<DefectProxy> {
  let defect: Defect | undefined;
  const channel = new grpc.Client(new URL(target).host, grpc.credentials.createInsecure());
  const server = new grpc.Server();
  for (const service of servicesOf(loadProtoRoot())) {
    const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const m of service.methodsArray) {
      const path = `/${service.fullName.slice(1)}/${m.name}`;
      const rpc = plan.rpcs.find((r) => r.grpc === path);
      const body = Object.entries(rpc?.fields ?? {}).find(([, r]) => r.to === 'body' && r.name === '')?.[0];
      m.resolve();
      const [requestType, responseType] = [m.resolvedRequestType!, m.resolvedResponseType!];
      definition[m.name] = {
        path,
        requestStream: false,
        responseStream: false,
        requestSerialize: passThrough,
        requestDeserialize: passThrough,
        responseSerialize: passThrough,
        responseDeserialize: passThrough,
      };
      handlers[m.name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        const d = defect;
        let seen = grpcCall(path, decodeRequest(requestType, call.request), body, call.metadata);
        let bytes = call.request;
        const metadata = call.metadata.clone();
        if (d?.request) {
          seen = d.request(seen);
          bytes = encodeResponse(requestType, body ? { ...seen.params, [body]: seen.resource } : seen.params);
          if (seen.authorization) metadata.set('authorization', seen.authorization);
        }
        channel.makeUnaryRequest(path, passThrough, passThrough, bytes, metadata, (error, answer) => {
          if (!d?.answer) return callback(error, answer);
          const a = d.answer(grpcAnswer(error, answer, responseType), seen);
          if (a.status === 200) return callback(null, encodeResponse(responseType, a.body));
          const metadata = new grpc.Metadata();
          metadata.set('grpc-status-details-bin', encodeStatus(a.body));
          callback({ code: a.body.code, details: a.body.message, metadata });
        });
      };
    }
    server.addService(definition, handlers);
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    plant: (d) => (defect = d),
    close: () =>
      new Promise((resolve) => {
        channel.close();
        server.tryShutdown(() => resolve());
      }),
  };
}
