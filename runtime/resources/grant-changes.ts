// Which committed writes can change what a cached grant says (runtime/access/authorization.ts reads an identity, its
// role bindings and their roles' capabilities): only those empty the grants caches, in this process and, through
// the store's notifications, in every other. A profile update or the token exchange's lastSeenTime does not.
import type { ResourceModel } from '../model/api-model.js';

export type WriteKind = 'create' | 'update' | 'delete';

/**
 * Whether a write of kind to r, changing these fields (an update's), can change someone's grants: any write of a
 * role binding; a change of a role's capabilities; a delete of an identity, of a role, or of a record whose
 * children include role bindings (a group: its bindings go with it). A new identity or role grants nothing yet.
 */
export function changesGrants(r: ResourceModel, kind: WriteKind, fields?: Iterable<string>): boolean {
  if (r.collection === 'roleBindings') return true;
  if (kind === 'delete')
    return r.collection === 'identities' || r.collection === 'roles' || r.children.includes('roleBindings');
  if (kind === 'create' || fields === undefined) return false;
  for (const name of fields) if (r.fields[name]?.grantsCapabilities) return true;
  return false;
}
