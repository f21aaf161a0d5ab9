// A gRPC client as a user builds one: grpc-js over the generated .proto files (proto-loader), on the server's
// HTTP port. Answers are plain objects with proto field names; errors carry their decoded google.rpc.Status.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { defaultGeneratedDir } from '../../runtime/operate/open-resources.js';
import { protoFiles } from '../../runtime/grpc/proto-root.js';
import { readStatusDetails } from '../../runtime/grpc/status.js';
import type { Detail } from '../../runtime/model/errors.js';

export interface GrpcReply {
  code: number;
  message?: string;
  details: Detail[];
  value?: any;
  metadata?: grpc.Metadata;
}

export interface GrpcTestClient {
  /** service: e.g. registry.v2.ReposService; token: '' sends none, one with a space is the whole header */
  call(
    service: string,
    rpc: string,
    request: object,
    token?: string,
    options?: grpc.CallOptions,
    headers?: Record<string, string>,
  ): Promise<GrpcReply>;
  close(): void;
}

/** The services of the generated protos of generatedDir, as proto-loader reads them. */
export function loadDefinitions(generatedDir = defaultGeneratedDir): protoLoader.PackageDefinition {
  const dir = join(generatedDir, 'proto');
  return protoLoader.loadSync(protoFiles(dir), {
    includeDirs: [dir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
  });
}

/** service names are below `root` (chainguard.platform: registry.v2.ReposService) */
export function grpcClient(
  url: string,
  defaultToken: string,
  generatedDir?: string,
  root = 'chainguard.platform',
): GrpcTestClient {
  const address = new URL(url).host;
  const loaded = grpc.loadPackageDefinition(loadDefinitions(generatedDir)) as any;
  const clients = new Map<string, grpc.Client & Record<string, any>>();
  const clientOf = (service: string) => {
    if (!clients.has(service)) {
      const ctor = `${root}.${service}`.split('.').reduce((o: any, k) => o?.[k], loaded);
      if (!ctor) throw new Error(`no service ${service}`);
      clients.set(service, new ctor(address, grpc.credentials.createInsecure()));
    }
    return clients.get(service)!;
  };
  return {
    call(service, rpc, request, token = defaultToken, options = {}, headers = {}) {
      const metadata = new grpc.Metadata();
      for (const [name, value] of Object.entries(headers)) metadata.set(name, value);
      if (token) metadata.set('authorization', token.includes(' ') ? token : `Bearer ${token}`);
      const client = clientOf(service);
      return new Promise((resolve) => {
        client[rpc](request, metadata, options, (error: grpc.ServiceError | null, value: any) => {
          if (!error) return resolve({ code: 0, details: [], value });
          const bin = error.metadata?.get('grpc-status-details-bin')[0];
          resolve({
            code: error.code,
            message: error.details,
            details: bin ? readStatusDetails(bin as Buffer).details : [],
            metadata: error.metadata,
          });
        });
      });
    },
    close: () => {
      for (const c of clients.values()) c.close();
    },
  };
}
