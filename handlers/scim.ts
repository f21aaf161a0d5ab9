// The SCIM token calls of identity providers (spec/iam.yaml, "SCIM token calls"): the lifecycle itself is
// runtime/access/scim-tokens.ts; here each call reads the provider, checks, and stores in one write with its
// event. Events never carry a token. This server runs no SCIM service: endpoint_url is left out.
import type { GenerateScimTokenResponse, IamHandlers, RegenerateScimTokenResponse } from '../generated/routes.js';
import type { IdentityProviderRecord } from '../generated/types.js';
import { and, equal } from '../runtime/tables/condition.js';
import { failedPrecondition, notFound } from '../runtime/model/errors.js';
import { now } from '../runtime/model/records.js';
import type { HandlerContext } from '../runtime/pipeline/operations.js';
import type { Writes } from '../runtime/resources/writes.js';
import {
  hasToken,
  initialScim,
  issueToken,
  newEtag,
  overlapSeconds,
  requireEtag,
  revoked,
  tokenExpiry,
  type ScimFields,
} from '../runtime/access/scim-tokens.js';

type ScimCalls = Pick<
  IamHandlers,
  'generateScimToken' | 'regenerateScimToken' | 'revokeScimToken' | 'setScimEnabled' | 'prepareIdentityProvider'
>;

/** Bindings of the owner role at an organization that SCIM provisioning needs before it may be switched on. */
export const ownersForScim = 2;

/** The provider in the call's write, or NOT_FOUND (the capability was checked at its scope already). */
async function providerOf(writes: Writes, context: HandlerContext, uid: string): Promise<IdentityProviderRecord> {
  const provider = await writes.get('identityProviders', uid);
  if (!provider) throw notFound(context.model.resources.identityProviders.type, uid);
  return provider;
}

const store = (writes: Writes, uid: string, fields: ScimFields) =>
  writes.update('identityProviders', uid, { ...fields, updateTime: now() } as Partial<IdentityProviderRecord>);

export const scim: ScimCalls = {
  /** A new provider starts with SCIM off, no token, and an etag to switch it on with. */
  async prepareIdentityProvider(record) {
    return { record: { ...record, scim: initialScim(), scimTokenDigest: null, scimPreviousTokenDigest: null } };
  },

  async generateScimToken({ identityProviderUid: uid, body }, context) {
    const expireTime = tokenExpiry(body.expireTime, body.neverExpires);
    return context.write(async (writes) => {
      const provider = await providerOf(writes, context, uid);
      if (hasToken(provider))
        throw failedPrecondition([
          {
            type: 'SCIM_TOKEN_EXISTS',
            subject: uid,
            description: 'the provider has a SCIM token: regenerate it (regenerateScimToken) or revoke it first',
          },
        ]);
      const { token, fields } = issueToken(provider, expireTime);
      await store(writes, uid, fields);
      const answer = { ...(expireTime ? { expireTime } : {}), identityProviderUid: uid, etag: fields.scim!.etag! };
      await writes.recordEvent('identityProviders', uid, answer);
      // Left out (proto3's unset): endpoint_url, and expire_time of a token that never expires.
      return { token, ...answer } as GenerateScimTokenResponse;
    });
  },

  async regenerateScimToken({ identityProviderUid: uid, body }, context) {
    const expireTime = tokenExpiry(body.expireTime, body.neverExpires);
    const overlap = overlapSeconds(body.overlap);
    return context.write(async (writes) => {
      const provider = await providerOf(writes, context, uid);
      requireEtag(provider.scim, body.etag);
      if (!hasToken(provider) && provider.scim?.credentialState !== 'CREDENTIAL_STATE_REVOKED')
        throw notFound('iam.chainguard.dev/ScimToken', uid);
      const { token, fields, previousTokenExpireTime } = issueToken(provider, expireTime, overlap);
      await store(writes, uid, fields);
      const answer = {
        ...(expireTime ? { expireTime } : {}),
        identityProviderUid: uid,
        etag: fields.scim!.etag!,
        ...(previousTokenExpireTime ? { previousTokenExpireTime } : {}),
        requestedOverlap: `${overlap}s`,
      };
      await writes.recordEvent('identityProviders', uid, answer);
      return { token, ...answer } as RegenerateScimTokenResponse;
    });
  },

  async revokeScimToken({ identityProviderUid: uid }, context) {
    return context.write(async (writes) => {
      const provider = await providerOf(writes, context, uid);
      const fields = revoked(provider);
      await store(writes, uid, fields);
      const answer = {
        identityProviderUid: uid,
        etag: fields.scim!.etag!,
        enabled: !!fields.scim!.enabled,
        revokeTime: now(),
      };
      await writes.recordEvent('identityProviders', uid, answer);
      return answer;
    });
  },

  async setScimEnabled({ identityProviderUid: uid, body }, context) {
    return context.write(async (writes) => {
      const provider = await providerOf(writes, context, uid);
      requireEtag(provider.scim, body.etag);
      if (body.enabled) {
        // Provisioning may take people out: at least two owners bound by hand must stay to set it right.
        const organization = uid.split('/')[0];
        const owner = context.model.roles.find((r) => r.name === 'owner')!.uid;
        const owners = await writes.count(
          'roleBindings',
          and(equal('parentUid', organization), equal('roleUid', owner)),
        );
        if (owners < ownersForScim)
          throw failedPrecondition([
            {
              type: 'TOO_FEW_OWNERS',
              subject: organization,
              description: `SCIM provisioning needs at least ${ownersForScim} owner role bindings made by hand at the organization`,
            },
          ]);
      }
      const fields = { scim: { ...provider.scim, enabled: body.enabled, etag: newEtag() } };
      await store(writes, uid, fields);
      const answer = { identityProviderUid: uid, enabled: body.enabled, etag: fields.scim.etag };
      await writes.recordEvent('identityProviders', uid, answer);
      return answer;
    });
  },
};
