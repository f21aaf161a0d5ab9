// The Platform's iam behaviour beyond the framework's IAM core (framework/handlers/iam.ts: role bindings hydrated).
import type { scim } from './scim.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type {
  AcceptGroupInviteRequest,
  AcceptGroupInviteResponse,
  AcceptTermsRequest,
  AcceptTermsResponse,
  IamHandlers,
  ListTermsAcceptancesRequest,
  ListTermsAcceptancesResponse,
  LookupIdentityRequest,
  LookupIdentityResponse,
} from '../generated/routes.js';
import type { IdentityRecord } from '../generated/types.js';
import { byUid, byUidOrder, summary } from '../framework/handlers/iam.js';
import { and, equal, isNull, matching, oneOf, or, type Condition } from '../runtime/tables/condition.js';
import { sameEmail, trustedEmail } from '../runtime/access/email-domain.js';
import { failedPrecondition, invalidArgument, notFound, permissionDenied } from '../runtime/model/errors.js';
import { groupAccess } from './group-access.js';
import { identityMetadata } from './identity-metadata.js';
import { parseListRequest } from '../runtime/lists/list-request.js';
import { now } from '../runtime/model/records.js';
import { ancestorsOf, newChildUid } from '../runtime/model/uid.js';

const hashOf = (secret: string) => createHash('sha256').update(secret).digest();

/** The v1-only calls are in handlers/v1-*.ts. */
export const iam: Omit<IamHandlers, 'register' | 'hydrateRoleBindings' | keyof typeof scim> = {
  ...groupAccess,
  ...identityMetadata,
  /**
   * A new invite gets a key id and a secret; the code (both) is shown in the create response only, and only
   * the secret's hash is stored. ttl becomes expirationTime.
   */
  /** The reference shows a mapping's identity provider as a field of its own: the parent's uid. */
  async prepareExternalGroupRoleMapping(record) {
    return { record: { ...record, identityProviderUid: record.parentUid! } };
  },

  async issueGroupInvite(record) {
    const seconds = Number(record.ttl.replace(/s$/, ''));
    if (!(seconds > 0))
      throw invalidArgument([{ field: 'ttl', description: 'ttl must be a positive duration such as "86400s"' }]);
    const keyId = randomBytes(8).toString('hex');
    const secret = randomBytes(24).toString('base64url');
    const expirationTime = new Date(Date.parse(record.createTime) + seconds * 1000).toISOString();
    return {
      record: { ...record, keyId, codeHash: hashOf(secret).toString('hex'), expirationTime },
      reveal: { code: `${keyId}.${secret}` },
    };
  },

  /**
   * Redeems an invite code: the caller is bound to the invite's role in its group (the binding is the event the
   * call declares); a single-use invite goes. An invite made for an email is redeemed only by an identity whose
   * verified email, from a trusted issuer (runtime/access/email-domain.ts), is that address; the refusal does not say
   * which address it is.
   */
  async acceptGroupInvite(request: AcceptGroupInviteRequest, context): Promise<AcceptGroupInviteResponse> {
    const { groupInvites } = context.model.resources;
    const [keyId, secret] = request.body.code.split('.');
    const caller = context.principal.subject!;
    return context.write(async (writes) => {
      const [invite] = keyId && secret ? await writes.find('groupInvites', equal('keyId', keyId), 1) : [];
      const stored = invite?.codeHash ? Buffer.from(invite.codeHash, 'hex') : Buffer.alloc(0);
      const given = secret ? hashOf(secret) : Buffer.alloc(32);
      if (!invite || stored.length !== given.length || !timingSafeEqual(stored, given))
        throw notFound(groupInvites.type, 'for this code');
      if (invite.email) {
        const email = trustedEmail(await writes.get('identities', caller), context.emailDomains);
        if (!email || !sameEmail(email, invite.email))
          throw permissionDenied(
            'this invite was made for another email address: accept it as an identity whose verified email, from a trusted issuer, is that address',
          );
      }
      if (Date.parse(invite.expirationTime ?? '') <= Date.now()) {
        throw failedPrecondition([
          {
            type: 'INVITE_EXPIRED',
            subject: invite.uid,
            description: `the invite expired at ${invite.expirationTime}`,
          },
        ]);
      }
      const group = invite.parentUid!;
      const { roleUid } = invite;
      let [binding] = await writes.find(
        'roleBindings',
        matching({ parentUid: group, identityUid: caller, roleUid }),
        1,
      );
      if (!binding) {
        const time = now();
        binding = {
          uid: newChildUid(group),
          parentUid: group,
          identityUid: caller,
          roleUid,
          createTime: time,
          updateTime: time,
        };
        await writes.insert('roleBindings', binding);
        await writes.recordEvent('roleBindings', binding.uid, {
          uid: binding.uid,
          identityUid: caller,
          roleUid,
        });
      }
      if (invite.singleUse) await writes.delete('groupInvites', invite.uid);
      return { roleBinding: binding.uid, group, roleUid };
    });
  },

  /** Records that the caller accepts these documents for the group; accepting again changes nothing. */
  async acceptTerms(request: AcceptTermsRequest, context): Promise<AcceptTermsResponse> {
    const { groups } = context.model.resources;
    const acceptedBy = context.principal.subject!;
    const documentIds = [...new Set(request.body.documentIds)].sort();
    await context.write(async (writes) => {
      if (!(await writes.get('groups', request.group))) throw notFound(groups.type, request.group);
      const time = now();
      for (const docId of documentIds) {
        if (
          (await writes.find('termsAcceptances', matching({ parentUid: request.group, docId, acceptedBy }), 1)).length >
          0
        )
          continue;
        await writes.insert('termsAcceptances', {
          uid: newChildUid(request.group),
          parentUid: request.group,
          docId,
          acceptedBy,
          orgUid: request.group,
          createTime: time,
          updateTime: time,
        });
      }
      await writes.recordEvent('groups', request.group, { group: request.group, documentIds });
    });
    return { documentIds, group: request.group };
  },

  /** Acceptances that apply to the group: its own and those of the organizations above it. */
  async listTermsAcceptances(request: ListTermsAcceptancesRequest, context): Promise<ListTermsAcceptancesResponse> {
    const r = context.model.resources.termsAcceptances;
    const page = await context.resources
      .readsOf('termsAcceptances')
      .list(parseListRequest(request, r), [oneOf('parentUid', [request.group, ...ancestorsOf(request.group)])]);
    return {
      termsAcceptances: page.items.map((a) => ({
        acceptedBy: a.acceptedBy,
        createTime: a.createTime,
        docId: a.docId,
        orgUid: a.orgUid,
      })),
      nextPageToken: page.nextPageToken,
      totalCount: page.totalCount,
      skipped: page.skipped,
    };
  },

  /**
   * The identity whose claimMatch names exactly this issuer and subject: a root identity, or one in a group where
   * the caller may list identities (context.visible); another tenant's is not found, as one that does not exist.
   */
  async lookupIdentity(request: LookupIdentityRequest, context): Promise<LookupIdentityResponse> {
    const identities = context.model.resources.identities;
    const [found, another] = await context.resources.tableOf('identities').find(
      and(
        equal('claimMatch.issuer', request.issuer),
        equal('claimMatch.subject', request.subject),
        // The visibility conditions are of identities: this endpoint lists them (spec).
        or(isNull('parentUid'), and(...(context.visible as Condition<IdentityRecord>[]))),
      ),
      byUidOrder,
      2,
    );
    if (!found) throw notFound(identities.type, `${request.issuer} ${request.subject}`);
    // Anyone may make a root identity with anyone's issuer and subject: answering one of several would hand the
    // caller whichever another tenant made, to bind as the person it looked up.
    if (another)
      throw failedPrecondition([
        {
          type: 'AMBIGUOUS',
          subject: `${request.issuer} ${request.subject}`,
          description: 'more than one identity has this issuer and subject: look it up by its uid instead',
        },
      ]);
    return { uid: found.uid };
  },

  /** An invite shows the role it binds: uid, name, description and capabilities, as they are now. */
  async presentGroupInvites(invites, context) {
    const roles = await byUid(
      context,
      'roles',
      invites.map((r) => r.roleUid),
    );
    return invites.map((r) => {
      const role = roles.get(r.roleUid);
      return { ...r, role: { ...summary(role, r.roleUid), capabilities: role?.capabilities ?? [] } };
    });
  },
};
