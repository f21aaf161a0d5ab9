// The face of the runtime: what generated code imports (the model's types, the record types it fills in, the
// router and the adapters' tables), so that a move inside runtime/ touches neither the generator nor the goldens.
// It sits above every floor and nothing in runtime/ imports it.
export type { ApiModel } from './model/api-model.js';
export type { RecordTypes, ResourceTypes } from './model/records.js';
export type { Router } from './http/router.js';
export type { HandlerContext, Prepare, RouteOperations } from './http/route-operations.js';
export type { RpcMethod, RpcOperations } from './grpc/operations.js';
export type { V1RpcRoute } from './grpc/rpc.js';
