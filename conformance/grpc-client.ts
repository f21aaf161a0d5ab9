// The suite over gRPC: each call a rule makes by HTTP method and path goes to the rpc of the same operation (the
// plan's rpcs), its request message built as the HTTP route reads the path, the query and the body, and the answer
// comes back as the exchange HTTP would give: the status of the gRPC code, the JSON of the response message or the
// google.rpc.Status of grpc-status-details-bin. A call gRPC cannot express is a Skip, never a failure.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { fromJson, jsonName, toJson } from '../runtime/grpc/proto-json.js';
import { loadProtoDir } from '../runtime/grpc/proto-root.js';
import { readStatusDetails } from '../runtime/grpc/status.js';
import type { Row } from '../runtime/model/records.js';
import { Skip, statusOf, type ApiClient, type Exchange } from './client.js';
import type { ConformancePlan, PlannedRpc } from './plan.js';

const passThrough = (b: Buffer) => b;
const numbers = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32', 'double', 'float']);
const wellKnown = new Set(['.google.protobuf.Timestamp', '.google.protobuf.Duration', '.google.protobuf.FieldMask']);

const fieldByJson = (type: protobuf.Type, key: string) =>
  type.fieldsArray.find((f) => jsonName(f) === key || f.name === key);

/** A query parameter's text as the field's proto3 JSON value. */
function queryValue(f: protobuf.Field, values: string[], param: string): unknown {
  const one = (v: string): unknown => {
    if (numbers.has(f.type)) return Number(v);
    if (f.type !== 'bool') return v;
    if (v !== 'true' && v !== 'false') throw new Skip(`${param}=${v} is not a bool, which a gRPC request cannot carry`);
    return v === 'true';
  };
  return f.repeated ? values.map(one) : one(values[values.length - 1]);
}

/** update_mask paths name proto fields (sync_config.source); the rules name JSON fields (syncConfig.source). */
function maskOf(type: protobuf.Type | undefined, mask: string): { paths: string[] } {
  const paths = mask.split(',').map((path) => {
    let t = type;
    return path
      .split('.')
      .map((segment) => {
        const f = t && fieldByJson(t, segment);
        t = f?.resolvedType instanceof protobuf.Type ? f.resolvedType : undefined;
        return f ? f.name : segment;
      })
      .join('.');
  });
  return { paths };
}

/**
 * Skips a request whose JSON the message cannot hold, which protobufjs would drop without a word: a key the
 * message lacks, an enum name it does not declare.
 */
function checkExpressible(type: protobuf.Type, json: Row, at: string): void {
  for (const [key, value] of Object.entries(json)) {
    const f = fieldByJson(type, key);
    if (!f) throw new Skip(`${at}${key} has no field in ${type.fullName.slice(1)}`);
    const t = f.resolvedType;
    const values = Array.isArray(value) ? value : [value];
    if (value === null || value === undefined || f.map || !t) continue;
    if (t instanceof protobuf.Enum) {
      const undeclared = values.find((v) => typeof v !== 'string' || !(v in t.values));
      if (undeclared !== undefined)
        throw new Skip(`${at}${key}: ${JSON.stringify(undeclared)} is no value of the enum ${t.fullName.slice(1)}`);
    } else if (t instanceof protobuf.Type && !wellKnown.has(t.fullName)) {
      for (const v of values) if (typeof v === 'object' && v) checkExpressible(t, v as Row, `${at}${key}.`);
    }
  }
}

export class GrpcClient implements ApiClient {
  private readonly root: protobuf.Root;
  private readonly channel: grpc.Client;

  constructor(
    readonly baseUrl: string,
    protoDir: string,
    private readonly plan: ConformancePlan,
    private readonly token?: () => Promise<string | undefined>,
    readonly lowPrivilegeToken?: string,
    /** names: the version whose package names the rpcs are called under (v2beta1) instead of the plan's */
    private readonly options: { names?: string } = {},
  ) {
    this.root = loadProtoDir(protoDir);
    const url = new URL(baseUrl);
    const credentials = url.protocol === 'https:' ? grpc.credentials.createSsl() : grpc.credentials.createInsecure();
    this.channel = new grpc.Client(url.host, credentials);
  }

  /** Resolves once the target accepts a connection; rejects after seconds. */
  ready(seconds: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.channel.waitForReady(Date.now() + seconds * 1000, (e) => (e ? reject(e) : resolve())),
    );
  }

  close(): void {
    this.channel.close();
  }

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Exchange> {
    const [rawPath, search = ''] = path.split('?');
    const { rpc, params } = this.route(method, rawPath);
    const requestType = this.root.lookupType(rpc.request);
    const request = this.request(rpc, requestType, params, new URLSearchParams(search), body);
    checkExpressible(requestType, request, '');
    const bytes = Buffer.from(requestType.encode(requestType.fromObject(fromJson(requestType, request))).finish());
    const metadata = await this.metadata(headers);
    const named = this.named(rpc.grpc);
    const exchange = { method, path, rpc: named, requestBody: request };
    return new Promise((resolve) =>
      this.channel.makeUnaryRequest(
        named,
        passThrough,
        passThrough,
        bytes,
        metadata,
        { deadline: Date.now() + 30000 },
        (error, answer) => resolve({ ...exchange, ...this.answer(this.root.lookupType(rpc.response), error, answer) }),
      ),
    );
  }

  /** An rpc by its :path, beyond the plan's routes (the v2beta1 names, the token service): request as proto3 JSON. */
  async rpc(path: string, request: Row, headers: Record<string, string> = {}): Promise<Exchange> {
    const [, service, name] = /^\/(.+)\/([^/]+)$/.exec(path) ?? [];
    const method = service ? this.root.lookupService(service).methods[name] : undefined;
    if (!method) throw new Skip(`the protos have no rpc ${path}`);
    method.resolve();
    const [requestType, responseType] = [method.resolvedRequestType!, method.resolvedResponseType!];
    const bytes = Buffer.from(requestType.encode(requestType.fromObject(fromJson(requestType, request))).finish());
    const metadata = await this.metadata(headers);
    const exchange = { method: 'RPC', path, rpc: path, requestBody: request };
    return new Promise((resolve) =>
      this.channel.makeUnaryRequest(
        path,
        passThrough,
        passThrough,
        bytes,
        metadata,
        { deadline: Date.now() + 30000 },
        (error, answer) => resolve({ ...exchange, ...this.answer(responseType, error, answer) }),
      ),
    );
  }

  /** The :path of an rpc of the plan under the package names of options.names: .v2. becomes .v2beta1. */
  private named(path: string): string {
    const { names } = this.options;
    return names ? path.replace(`.${this.plan.version}.`, `.${names}.`) : path;
  }

  /** The rpc of the first route (in the router's order) that matches the method and path. */
  private route(method: string, path: string): { rpc: PlannedRpc; params: Record<string, string> } {
    for (const rpc of this.plan.rpcs) {
      const m = rpc.method === method ? new RegExp(rpc.pattern).exec(path) : null;
      if (m) return { rpc, params: Object.fromEntries(rpc.params.map((p, i) => [p, decodeURIComponent(m[i + 1])])) };
    }
    throw new Skip(`no rpc serves ${method} ${path} (HTTP only)`);
  }

  /** The request message as proto3 JSON, each part of the HTTP request put where the rpc's field routes say. */
  private request(
    rpc: PlannedRpc,
    type: protobuf.Type,
    params: Record<string, string>,
    query: URLSearchParams,
    body: unknown,
  ): Row {
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
      throw new Skip(`a body that is not a JSON object (${JSON.stringify(body).slice(0, 40)}) is no request message`);
    const routes = Object.entries(rpc.fields);
    const whole = routes.find(([, r]) => r.to === 'body' && r.name === '')?.[0];
    const request: Row = {};
    // An update names its record inside the message (repo.uid), where the HTTP route has it in the path.
    const message: Row = { ...(body as Row | undefined) };
    for (const [param, value] of Object.entries(params)) {
      const field = routes.find(([, r]) => r.to === 'param' && r.name === param)?.[0];
      if (field) request[field] = value;
      else if (whole) message[param] = value;
      else throw new Skip(`${rpc.grpc} has no field for the path parameter ${param}`);
    }
    if (whole) request[whole] = message;
    else
      for (const [key, value] of Object.entries(body ?? {})) {
        const field = routes.find(([, r]) => r.to === 'body' && r.name === key)?.[0];
        if (!field) throw new Skip(`the body field ${key} has no field in ${rpc.request}`);
        request[field] = value;
      }
    for (const key of new Set(query.keys())) this.queryField(rpc, type, request, key, query.getAll(key));
    return request;
  }

  private queryField(rpc: PlannedRpc, type: protobuf.Type, request: Row, key: string, values: string[]): void {
    const routes = Object.entries(rpc.fields);
    const mask = routes.find(([, r]) => r.to === 'mask')?.[0];
    if (mask && (key === 'update_mask' || key === 'updateMask')) {
      const bodyType = rpc.bodyMessage ? this.root.lookupType(rpc.bodyMessage) : undefined;
      request[mask] = maskOf(bodyType, values[values.length - 1]);
      return;
    }
    // A message of query parameters (uidp): its fields are the parameters uidp.<proto name>.
    const nested = routes.find(([, r]) => r.to === 'query' && r.name.endsWith('.') && key.startsWith(r.name));
    if (nested) {
      const nestedType = fieldByJson(type, nested[0])!.resolvedType as protobuf.Type;
      const f = nestedType.fields[key.slice(nested[1].name.length)];
      if (!f) throw new Skip(`the query parameter ${key} has no field in ${nestedType.fullName.slice(1)}`);
      request[nested[0]] = { ...(request[nested[0]] as Row | undefined), [f.name]: queryValue(f, values, key) };
      return;
    }
    const field = routes.find(([, r]) => r.to === 'query' && r.name === key)?.[0];
    if (!field) throw new Skip(`the query parameter ${key} has no field in ${rpc.request}`);
    request[field] = queryValue(fieldByJson(type, field)!, values, key);
  }

  /** The token as HTTP sends it: a rule's authorization header wins, '' sends none; other headers have no rpc. */
  private async metadata(headers: Record<string, string>): Promise<grpc.Metadata> {
    const metadata = new grpc.Metadata();
    for (const [name, value] of Object.entries(headers)) {
      const plainJson = name === 'content-type' && value === 'application/json';
      if (name !== 'authorization' && name !== 'accept' && !plainJson)
        throw new Skip(`the header ${name}: ${value} has no gRPC counterpart`);
    }
    const authorization = headers.authorization ?? (await this.token?.().then((t) => (t ? `Bearer ${t}` : '')));
    if (authorization) metadata.set('authorization', authorization);
    return metadata;
  }

  private answer(
    type: protobuf.Type,
    error: grpc.ServiceError | null,
    answer?: Buffer,
  ): Pick<Exchange, 'status' | 'body'> {
    if (error) {
      const bin = error.metadata?.get('grpc-status-details-bin')[0];
      const body = bin
        ? readStatusDetails(bin as Buffer)
        : { code: error.code, message: error.details, details: [] as unknown[] };
      return { status: statusOf[error.code] ?? 500, body };
    }
    // proto3 leaves out fields at their default (false, 0, ''): they are printed, as the JSON mapping allows, so
    // that an answer reads as HTTP's, e.g. skipped: 0 on a first page.
    const plain = type.toObject(type.decode(answer!), { longs: String, enums: String, bytes: String, defaults: true });
    return { status: 200, body: toJson(type, plain as Row) };
  }
}
