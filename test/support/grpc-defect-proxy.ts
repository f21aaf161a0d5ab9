// A gRPC proxy in front of a server that plants one defect: every rpc of the generated protos is forwarded as raw
// bytes, and a rewrite may change a request, a response (decoded and encoded by the rpc's messages) or an error.
import * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { loadProtoRoot } from '../../runtime/grpc/proto-root.js';

const passThrough = (b: Buffer) => b;

export interface GrpcRewrite {
  /** the rpc's :path, e.g. /chainguard.platform.registry.v2.ReposService/ListRepos */
  (rpc: string): {
    request?: (message: Record<string, any>) => Record<string, any>;
    response?: (message: Record<string, any>) => Record<string, any>;
    /** an upstream error's code becomes this one */
    error?: (code: number) => number;
  };
}

export async function grpcDefectProxy(
  target: string,
  rewrite: GrpcRewrite,
): Promise<{ url: string; close(): Promise<void> }> {
  const root = loadProtoRoot();
  const channel = new grpc.Client(new URL(target).host, grpc.credentials.createInsecure());
  const server = new grpc.Server();
  const services: protobuf.Service[] = [];
  const collect = (ns: protobuf.NamespaceBase) => {
    for (const o of ns.nestedArray) {
      if ((o as protobuf.Service).methodsArray) services.push(o as protobuf.Service);
      else if ((o as protobuf.Namespace).nestedArray) collect(o as protobuf.Namespace);
    }
  };
  collect(root);
  const recode = (type: protobuf.Type, bytes: Buffer, change?: (m: Record<string, any>) => Record<string, any>) =>
    change
      ? Buffer.from(type.encode(type.fromObject(change(type.toObject(type.decode(bytes), { longs: String })))).finish())
      : bytes;
  for (const service of services) {
    const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const m of service.methodsArray) {
      const path = `/${service.fullName.slice(1)}/${m.name}`;
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
        const plan = rewrite(path);
        channel.makeUnaryRequest(
          path,
          passThrough,
          passThrough,
          recode(requestType, call.request, plan.request),
          call.metadata,
          (error, answer) => {
            if (error) callback({ ...error, code: plan.error?.(error.code) ?? error.code });
            else callback(null, recode(responseType, answer!, plan.response));
          },
        );
      };
    }
    server.addService(definition, handlers);
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        channel.close();
        server.tryShutdown(() => resolve());
      }),
  };
}
