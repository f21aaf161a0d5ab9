// The behaviour of the framework's IAM core (framework/spec/iam.yaml): role bindings are answered hydrated, with
// the identity (its token subject and issuer), the group and the role they join instead of bare uids. The create
// response, like every other, has no updateTime.
import { oneOf, type Property } from '../../runtime/tables/condition.js';
import type { RecordTypes, ResourceTypes } from '../../runtime/model/records.js';
import type { HandlerContext } from '../../runtime/http/route-operations.js';

export const byUidOrder = [{ property: 'uid', desc: false }];

/** The records of a core collection with these uids, by uid. */
export async function byUid<C extends 'identities' | 'groups' | 'roles'>(
  context: HandlerContext,
  collection: C,
  uids: string[],
): Promise<Map<string, RecordTypes[C]>> {
  const unique = [...new Set(uids.filter(Boolean))];
  if (unique.length === 0) return new Map();
  // Every record has a uid; the compiler cannot see that through the generic collection.
  const records = await context.resources
    .tableOf(collection)
    .find(oneOf('uid' as Property<RecordTypes[C]>, unique), byUidOrder, -1);
  return new Map(records.map((r) => [r.uid, r]));
}

/** A record as another shows it: its uid, name and description. */
export const summary = (row: { name?: string | null; description?: string | null } | undefined, uid: string) => ({
  uid,
  name: row?.name ?? '',
  description: row?.description ?? '',
});

// Typed by the runtime's resource types, not one API's generated/: a new API's project typechecks with its own.
type RoleBindingResource = ResourceTypes['roleBindings'];

export const coreIam: {
  hydrateRoleBindings(resources: RoleBindingResource[], context: HandlerContext): Promise<Record<string, unknown>[]>;
} = {
  async hydrateRoleBindings(bindings, context) {
    const groupOf = (r: RoleBindingResource) => r.uid.slice(0, r.uid.lastIndexOf('/'));
    const [identities, groups, roles] = await Promise.all([
      byUid(
        context,
        'identities',
        bindings.map((r) => r.identityUid),
      ),
      byUid(context, 'groups', bindings.map(groupOf)),
      byUid(
        context,
        'roles',
        bindings.map((r) => r.roleUid),
      ),
    ]);
    return bindings.map((r) => {
      const identity = identities.get(r.identityUid);
      const claims = identity?.claimMatch ?? {};
      return {
        uid: r.uid,
        identityUid: r.identityUid,
        roleUid: r.roleUid,
        identity: { ...summary(identity, r.identityUid), subject: claims.subject ?? '', issuer: claims.issuer ?? '' },
        group: summary(groups.get(groupOf(r)), groupOf(r)),
        role: summary(roles.get(r.roleUid), r.roleUid),
        createTime: r.createTime,
      };
    });
  },
};
