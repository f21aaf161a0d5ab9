// Role bindings are answered hydrated: the identity (with its token subject and issuer), the group and the
// role they join, instead of bare uids. The create response, like every other, has no updateTime.
import type { IamHandlers, LookupIdentityRequest, LookupIdentityResponse } from '../generated/routes.js';
import { notFound } from '../runtime/errors.js';
import type { Row } from '../runtime/records.js';
import type { HandlerContext } from '../runtime/route-operations.js';

async function byUid(context: HandlerContext, collection: string, uids: string[], fields: string[]): Promise<Map<string, Row>> {
  const unique = [...new Set(uids.filter(Boolean))];
  if (unique.length === 0) return new Map();
  const type = context.model.resources[collection].type;
  const rows = await context.store.em().find(type, { uid: { $in: unique } }, { fields: ['uid', ...fields] as never[] }) as Row[];
  return new Map(rows.map((r) => [r.uid as string, r]));
}

const summary = (row: Row | undefined, uid: string) => ({ uid, name: row?.name ?? '', description: row?.description ?? '' });

export const iam: IamHandlers = {
  /** The identity whose claimMatch names exactly this issuer and subject. */
  async lookupIdentity(request: LookupIdentityRequest, context): Promise<LookupIdentityResponse> {
    const identities = context.model.resources.identities;
    const found = await context.store.em().findOne(identities.type, { claimMatch: { issuer: request.issuer, subject: request.subject } } as object, { fields: ['uid'] as never[] }) as Row | null;
    if (!found) throw notFound(identities.type, `${request.issuer} ${request.subject}`);
    return { uid: found.uid as string };
  },

  async hydrateRoleBindings(records, context) {
    const groupOf = (r: Row) => (r.uid as string).slice(0, (r.uid as string).lastIndexOf('/'));
    const [identities, groups, roles] = await Promise.all([
      byUid(context, 'identities', records.map((r) => r.identityUid as string), ['name', 'description', 'claimMatch']),
      byUid(context, 'groups', records.map(groupOf), ['name', 'description']),
      byUid(context, 'roles', records.map((r) => r.roleUid as string), ['name', 'description']),
    ]);
    return records.map((r) => {
      const identity = identities.get(r.identityUid as string);
      const claims = (identity?.claimMatch ?? {}) as Row;
      return {
        uid: r.uid,
        identityUid: r.identityUid,
        roleUid: r.roleUid,
        identity: { ...summary(identity, r.identityUid as string), subject: claims.subject ?? '', issuer: claims.issuer ?? '' },
        group: summary(groups.get(groupOf(r)), groupOf(r)),
        role: summary(roles.get(r.roleUid as string), r.roleUid as string),
        createTime: r.createTime,
      };
    });
  },
};
