// This checkout's generated/ and the Platform's handlers that go with it, imported by name rather than by a path found at run time (server.ts's
// loadGenerated, which tests point at other specs), so that the start-up build (scripts/server-build.mjs)
// bundles it and rebuilds when it changes.
import type { EntitySchema } from '@mikro-orm/core';
import { entities } from '../generated/entities.js';
import { createRpcTable, v1Rpcs, v1Unimplemented } from '../generated/grpc.js';
import { apiModel } from '../generated/model.js';
import { createRouter, createSteps } from '../generated/routes.js';
import { handlers, v1Extensions } from '../handlers/index.js';
import { defaultGeneratedDir } from '../runtime/operate/open-resources.js';
import type { GeneratedParts } from './server.js';

export const generated: GeneratedParts = {
  dir: defaultGeneratedDir,
  model: apiModel,
  entities: entities as EntitySchema[],
  createRouter,
  createSteps,
  createRpcTable,
  v1Rpcs,
  v1Unimplemented,
  handlers,
  v1Extensions,
};
