// Organizations found by the caller's email domain: groups:checkEligibility, groups:lookupGroup and
// groups/{uid}:requestGroupAccess. The domain is that of the verified email the token exchange last recorded for
// the caller, from a trusted issuer (runtime/access/email-domain.ts); it names a verified root group of that name.
// Every way of not finding one (no email, an untrusted issuer, a blocked domain, no such organization, another uid) is
// the same NOT_FOUND, so that a caller cannot tell "no such organization" from "you may not know".
import type {
  CheckEligibilityRequest,
  CheckEligibilityResponse,
  LookupGroupRequest,
  LookupGroupResponse,
  RequestGroupAccessRequest,
  RequestGroupAccessResponse,
} from '../generated/routes.js';
import type { GroupRecord, IdentityRecord } from '../generated/types.js';
import { and, equal, isNull, or, range } from '../runtime/tables/condition.js';
import { trustedEmailDomain } from '../runtime/access/email-domain.js';
import { ApiError, invalidArgument } from '../runtime/model/errors.js';
import { now, toResource } from '../runtime/model/records.js';
import type { HandlerContext } from '../runtime/pipeline/operations.js';
import { isUidPath, newChildUid } from '../runtime/model/uid.js';

/** A repeated request by the same caller for the same group within this time is refused (429). */
export const repeatRequestSeconds = 24 * 60 * 60;

const noOrganization = () =>
  new ApiError('NOT_FOUND', 'Not found: no verified organization matches the email domain of your token', [
    {
      '@type': 'type.googleapis.com/google.rpc.ResourceInfo',
      resourceType: 'iam.chainguard.dev/Group',
      resourceName: '',
      description: 'no verified organization matches the email domain of your token',
    },
  ]);

async function caller(context: HandlerContext): Promise<IdentityRecord | null> {
  return context.resources.tableOf('identities').get(context.principal.subject!);
}

/** The verified root group named by the caller's trusted email domain, if any. */
async function organizationOf(context: HandlerContext, identity: IdentityRecord | null): Promise<GroupRecord | null> {
  const domain = trustedEmailDomain(identity, context.emailDomains);
  if (!domain) return null;
  const [group] = await context.resources
    .tableOf('groups')
    .find(
      and(equal('name', domain), isNull('parentUid'), equal('verified', true)),
      [{ property: 'uid', desc: false }],
      1,
    );
  return group ?? null;
}

export const groupAccess = {
  async checkEligibility(
    _request: CheckEligibilityRequest,
    context: HandlerContext,
  ): Promise<CheckEligibilityResponse> {
    return { eligible: trustedEmailDomain(await caller(context), context.emailDomains) !== undefined };
  },

  async lookupGroup(_request: LookupGroupRequest, context: HandlerContext): Promise<LookupGroupResponse> {
    const group = await organizationOf(context, await caller(context));
    if (!group) throw noOrganization();
    return { group: toResource(group, context.model.resources.groups) as LookupGroupResponse['group'] };
  },

  /**
   * Recorded, and announced to the organization by the call's event (its subscriptions deliver it to whoever
   * decides); the answer is empty, as the reference's is. A repeat within a day is RESOURCE_EXHAUSTED.
   */
  async requestGroupAccess(
    request: RequestGroupAccessRequest,
    context: HandlerContext,
  ): Promise<RequestGroupAccessResponse> {
    if (request.groupUid === '') throw invalidArgument([{ field: 'group_uid', description: 'group_uid is required' }]);
    const identity = await caller(context);
    const group = isUidPath(request.groupUid) ? await organizationOf(context, identity) : null;
    if (!group || group.uid !== request.groupUid) throw noOrganization();
    const identityUid = identity!.uid;
    const email = identity!.email!.toLowerCase();
    await context.write(async (writes) => {
      const since = new Date(Date.now() - repeatRequestSeconds * 1000).toISOString();
      // One person, many identities: a repeat is the same identity or the same email.
      const [recent] = await writes.find(
        'groupAccessRequests',
        and(
          equal('parentUid', group.uid),
          or(equal('identityUid', identityUid), equal('email', email)),
          range('createTime', { gt: since }),
        ),
        1,
      );
      if (recent) {
        const retry = Math.max(1, Math.ceil((Date.parse(recent.createTime) - Date.parse(since)) / 1000));
        throw new ApiError(
          'RESOURCE_EXHAUSTED',
          `Resource exhausted: ${email} asked to join ${group.uid} already; the request was sent, and may be repeated in ${retry} s`,
          [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retry}s` }],
        );
      }
      const time = now();
      const uid = newChildUid(group.uid);
      await writes.insert('groupAccessRequests', {
        uid,
        parentUid: group.uid,
        identityUid,
        email,
        createTime: time,
        updateTime: time,
      });
      await writes.recordEvent('groupAccessRequests', uid, { group: group.uid, identity: identityUid, email });
    });
    return {};
  },
};
