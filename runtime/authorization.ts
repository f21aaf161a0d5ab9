// Who is calling, and whether they hold an operation's capability at a scope.
import type { Capability } from './model.js';

export interface Principal {
  /** Identity uid, or undefined for an anonymous caller. */
  subject?: string;
}

/** Decides access. Access control (capabilities from role bindings) replaces the open policy. */
export interface Policy {
  /** Throws PERMISSION_DENIED (or UNAUTHENTICATED) unless the principal holds every capability at scope. */
  requireCapability(principal: Principal, capability: Capability, scope: string | undefined): Promise<void>;
}

/** Every caller may do everything: the server's behaviour before tokens and role bindings exist. */
export const openPolicy: Policy = {
  async requireCapability() {},
};
