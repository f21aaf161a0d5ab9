// The behaviour of the framework's spec modules (framework/spec/): what every API built with it has, whatever its
// own domains. An API's handlers/index.ts spreads these into its own (the Platform's: handlers/index.ts; a new
// API's, as npm run new-api writes it).
import { events } from './events.js';
import { coreIam } from './iam.js';

export const coreHandlers = { events, iam: coreIam };
