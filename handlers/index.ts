// The hand-written behaviour, one module per domain; tsc checks it against the generated interfaces.
import type { Handlers } from '../generated/routes.js';
import { iam } from './iam.js';
import { libraries } from './libraries.js';
import { ping } from './ping.js';
import { registry } from './registry.js';

export const handlers: Handlers = { iam, libraries, ping, registry };
