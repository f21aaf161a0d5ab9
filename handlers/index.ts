// The Platform's hand-written behaviour, one module per domain, beside the framework's core (framework/handlers/);
// tsc checks it against the generated interfaces. The server takes it with the Platform's generated parts
// (server/generated.ts), never with another spec's. The calls only
// v1 has are declared endpoints too (handlers/v1-*.ts); what v1 has beyond them is a V1Extension.
import type { Handlers } from '../generated/routes.js';
import { coreHandlers } from '../framework/handlers/index.js';
import { iam } from './iam.js';
import { libraries } from './libraries.js';
import { ping } from './ping.js';
import { registry } from './registry.js';
import { scim } from './scim.js';
import { advisoryEvents } from './v1-advisory-events.js';
import { eolTags } from './v1-eol-tags.js';
import { identityLookup } from './v1-identity-lookup.js';
import { register } from './v1-register.js';
import { vulnReports } from './v1-vuln-reports.js';
import type { V1Extension } from '../runtime/http/v1/adapter.js';

export const handlers: Handlers = {
  events: coreHandlers.events,
  iam: { ...coreHandlers.iam, ...iam, ...register, ...scim },
  libraries,
  ping,
  registry: { ...registry, ...eolTags, ...vulnReports },
};

/** What v1 has beyond its generic adapter and its declared endpoints, by collection. */
export const v1Extensions: Record<string, V1Extension> = {
  advisories: advisoryEvents,
  identities: identityLookup,
};
