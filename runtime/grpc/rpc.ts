// What the generator tells the gRPC adapter about each rpc: its messages, and where each request field goes in
// the pipeline's Call (generated/grpc.ts holds one RpcRoute per rpc).

export type RpcKind =
  | 'list'
  | 'get'
  | 'create'
  | 'batchCreate'
  | 'batchDelete'
  | 'update'
  | 'delete'
  | 'subresourceGet'
  | 'subresourceUpdate'
  | 'endpoint';

/** Where a request field (by its JSON name) goes: a path parameter, a query parameter, the body, or the mask. */
export interface FieldRoute {
  to: 'param' | 'query' | 'body' | 'mask';
  /** the parameter or body field; '' for the body: the field's message is the body itself */
  name: string;
}

export interface RpcRoute {
  /** the HTTP/2 :path, /<package>.<Service>/<Rpc> */
  path: string;
  request: string;
  response: string;
  fields: Record<string, FieldRoute>;
  /** an update's resource message, whose field names the update_mask paths are */
  bodyMessage?: string;
}

/** Where a v1 rpc goes: the v1 HTTP route of its google.api.http rule (runtime/grpc/v1.ts transcodes it). */
export interface V1Http {
  method: string;
  /** the path template: /registry/v1/repos/{id=**} */
  template: string;
  /** "*": the whole request is the body; a field's name: that field is; absent: the fields not in the path are the query */
  body?: string;
  /** the request's and the answer's fields that v1's HTTP bodies name otherwise (created_at for create_time) */
  names?: { request?: NameTree; response?: NameTree };
}

/** By JSON name: the name v1's HTTP body gives the field (to), and the renames inside its message (fields). */
export type NameTree = Record<string, { to?: string; fields?: NameTree }>;

export interface V1RpcRoute {
  path: string;
  request: string;
  response: string;
  v1: V1Http;
}
