// AIP-193 errors on the gRPC wire: the status code, the message, and grpc-status-details-bin carrying a serialized
// google.rpc.Status with the same typed details as the HTTP body (ErrorInfo, BadRequest, ResourceInfo, ...).
import protobuf from 'protobufjs';
import type { ApiError, Detail } from '../model/errors.js';

// google/rpc/status.proto and error_details.proto, the messages our errors carry. Field names are the JSON names
// our details use; the wire knows only the numbers.
const rpc = protobuf.Root.fromJSON(<protobuf.INamespace>{
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
            Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            ErrorInfo: {
              fields: {
                reason: { type: 'string', id: 1 },
                domain: { type: 'string', id: 2 },
                metadata: <protobuf.IMapField>{ keyType: 'string', type: 'string', id: 3 },
              },
            },
            BadRequest: {
              fields: { fieldViolations: { rule: 'repeated', type: 'FieldViolation', id: 1 } },
              nested: {
                FieldViolation: {
                  fields: { field: { type: 'string', id: 1 }, description: { type: 'string', id: 2 } },
                },
              },
            },
            ResourceInfo: {
              fields: {
                resourceType: { type: 'string', id: 1 },
                resourceName: { type: 'string', id: 2 },
                owner: { type: 'string', id: 3 },
                description: { type: 'string', id: 4 },
              },
            },
            RetryInfo: { fields: { retryDelay: { type: 'google.protobuf.Duration', id: 1 } } },
            QuotaFailure: {
              fields: { violations: { rule: 'repeated', type: 'Violation', id: 1 } },
              nested: {
                Violation: {
                  fields: { subject: { type: 'string', id: 1 }, description: { type: 'string', id: 2 } },
                },
              },
            },
            PreconditionFailure: {
              fields: { violations: { rule: 'repeated', type: 'Violation', id: 1 } },
              nested: {
                Violation: {
                  fields: {
                    type: { type: 'string', id: 1 },
                    subject: { type: 'string', id: 2 },
                    description: { type: 'string', id: 3 },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
});

const Status = rpc.lookupType('google.rpc.Status');
const typePrefix = 'type.googleapis.com/';

function packDetail(d: Detail): { type_url: string; value: Uint8Array } | undefined {
  const name = d['@type'].startsWith(typePrefix) ? d['@type'].slice(typePrefix.length) : '';
  const type = rpc.lookup(name);
  if (!(type instanceof protobuf.Type)) return undefined;
  const fields: Record<string, unknown> = Object.fromEntries(Object.entries(d).filter(([k]) => k !== '@type'));
  // A Duration is "3s" in JSON and seconds and nanos on the wire.
  if (typeof fields.retryDelay === 'string') fields.retryDelay = { seconds: parseInt(fields.retryDelay, 10) };
  return { type_url: d['@type'], value: type.encode(type.fromObject(fields)).finish() };
}

/** The serialized google.rpc.Status of an error, as grpc-status-details-bin carries it. */
export function statusDetails(error: ApiError, errorDomain: string): Buffer {
  return encodeStatus(error.body(errorDomain));
}

/** An AIP-193 body (code, message, details with their @type) as a serialized google.rpc.Status. */
export function encodeStatus(body: { code: number; message: string; details: Detail[] }): Buffer {
  const details = body.details.map(packDetail).filter((d) => d !== undefined);
  return Buffer.from(Status.encode(Status.fromObject({ code: body.code, message: body.message, details })).finish());
}

/** A google.rpc.Status read back: code, message and details with their @type, as the HTTP body has them. */
export function readStatusDetails(bytes: Buffer): { code: number; message: string; details: Detail[] } {
  const s = Status.toObject(Status.decode(bytes)) as {
    code: number;
    message: string;
    details?: { type_url: string; value: Uint8Array }[];
  };
  const details = (s.details ?? []).map((any) => {
    const type = rpc.lookupType(any.type_url.slice(typePrefix.length));
    const fields = type.toObject(type.decode(any.value), { longs: Number });
    if (fields.retryDelay) fields.retryDelay = `${fields.retryDelay.seconds ?? 0}s`;
    return { '@type': any.type_url, ...fields } as Detail;
  });
  return { code: s.code ?? 0, message: s.message ?? '', details };
}
