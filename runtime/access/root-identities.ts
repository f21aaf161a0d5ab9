// Identities made at the root (humans who registered, identities made with no group) live in no group, so no
// binding above them says who may act on them. They are reached instead through where they are bound:
// - read (get, and bound by a role binding): the identity itself; a caller holding the capability in a group
//   where it is bound; its creator while it is bound nowhere (one just made, not yet bound);
// - updated: a caller holding the capability in every group where it is bound (no tenant renames another's
//   member), or its creator while it is bound nowhere;
// - deleted: as updated, or the identity itself; a bound identity is not deleted at all (its bindings go first,
//   by whoever may delete them), so no organization loses its last owner that way.
// Any other caller is refused alike whether the identity exists or not.
import { equal } from '../tables/condition.js';
import type { ApiModel, ResourceModel } from '../model/api-model.js';
import type { Resources } from '../resources/standard-methods.js';
import type { Sql } from '../storage/sql.js';
import type { RowLock } from '../storage/dialect.js';
import { isUidPath } from '../model/uid.js';

export type RootIdentityUse = 'read' | 'update' | 'delete';

/** Whether uid names a root identity: an identity whose uid has no group in it. */
export function isRootIdentity(model: ApiModel, r: ResourceModel, uid: string | undefined): uid is string {
  return r === model.resources.identities && uid !== undefined && isUidPath(uid) && !uid.includes('/');
}

/** Where a root identity is bound, and who made it (when the API did); lock: its bindings, in sql's write. */
export async function rootIdentityPlaces(
  resources: Resources,
  uid: string,
  sql?: Sql,
  lock?: RowLock,
): Promise<{ bound: string[]; creator?: string }> {
  const { identities, roleBindings } = resources.model.resources;
  const bindingTable = resources.table(roleBindings.type);
  const [identity, bindings] = await Promise.all([
    resources.table(identities.type).get(uid, sql),
    sql && lock
      ? bindingTable.findLocked(sql, equal('identityUid', uid), lock)
      : bindingTable.find(equal('identityUid', uid), [{ property: 'uid', desc: false }], -1, 0, sql),
  ]);
  return {
    bound: [...new Set(bindings.map((b) => b.parentUid as string))],
    creator: (identity?.creatorUid as string | null) ?? undefined,
  };
}

/**
 * Whether a caller (`caller`, and `holdsAt`: whether it holds the capability at a group) may put a root identity
 * to this use, by the rules above. `holdsAt(undefined)`: in some group.
 */
export function mayUseRootIdentity(
  use: RootIdentityUse,
  uid: string,
  places: { bound: string[]; creator?: string },
  caller: string,
  holdsAt: (group: string | undefined) => boolean,
): boolean {
  const { bound, creator } = places;
  if (caller === uid && use !== 'update') return true;
  if (bound.length === 0) return creator === caller && holdsAt(undefined);
  return use === 'read' ? bound.some(holdsAt) : bound.every(holdsAt);
}
