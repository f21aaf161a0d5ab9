// identities:updateIdentityMetadata: the caller's own profile and onboarding answers (AIP-134: a field mask, or
// the fields given). The company is the identity's own field; the rest is kept in its never-returned metadata;
// hubspotUtk is passed on in the event and the answer and never stored. The event is internal, as the
// reference's is: no subscription receives it.
import type { UpdateIdentityMetadataRequest, UpdateIdentityMetadataResponse } from '../generated/routes.js';
import type { IdentityRecord } from '../generated/types.js';
import { invalidArgument, unauthenticated } from '../runtime/model/errors.js';
import { lowerCamelCase } from '../runtime/model/field-names.js';
import type { HandlerContext } from '../runtime/pipeline/operations.js';

type Metadata = UpdateIdentityMetadataRequest['body']['identityMetadata'];
type Stored = NonNullable<IdentityRecord['metadata']>;

const settable = [
  'company',
  'updatesOptIn',
  'product',
  'jobTitle',
  'utmCampaign',
  'utmContent',
  'utmMedium',
  'utmSource',
  'utmTerm',
  'latestFormSubmitUrl',
  'latestInternalReferringUrl',
  'hubspotUtk',
  'selfServe',
] as const;
type Settable = (typeof settable)[number];
const outputOnly = new Set(['uid', 'name', 'givenName', 'familyName']);

/** The fields the update changes: the mask's (camelCase or snake_case, "*" for all), else those given. */
function maskedFields(body: Metadata, mask: string | undefined): Settable[] {
  const paths = (mask ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (paths.length === 0) return settable.filter((f) => body[f] !== undefined);
  if (paths.length === 1 && paths[0] === '*') return [...settable];
  const violations = paths.flatMap((path) => {
    const name = lowerCamelCase(path.replace(/^identity_metadata\.|^identityMetadata\./, ''));
    if ((settable as readonly string[]).includes(name)) return [];
    const why = outputOnly.has(name) ? 'field is output only' : 'no such field';
    return [{ field: 'update_mask', description: `${path}: ${why}` }];
  });
  if (violations.length > 0) throw invalidArgument(violations);
  return paths.map((p) => lowerCamelCase(p.replace(/^identity_metadata\.|^identityMetadata\./, '')) as Settable);
}

/** The answer's fields, each at its zero value (proto3 JSON with every field shown, as the reference answers). */
const blank: Omit<UpdateIdentityMetadataResponse, 'uid' | 'name' | 'givenName' | 'familyName'> = {
  company: '',
  updatesOptIn: false,
  product: '',
  jobTitle: '',
  utmCampaign: '',
  utmContent: '',
  utmMedium: '',
  utmSource: '',
  utmTerm: '',
  latestFormSubmitUrl: '',
  latestInternalReferringUrl: '',
  hubspotUtk: '',
  selfServe: false,
};

/** The display name split as the reference does: the first word, and the rest. */
function splitName(name: string): { givenName: string; familyName: string } {
  const [givenName = '', ...rest] = name.trim().split(/\s+/);
  return { givenName, familyName: rest.join(' ') };
}

export const identityMetadata = {
  async updateIdentityMetadata(
    request: UpdateIdentityMetadataRequest,
    context: HandlerContext,
  ): Promise<UpdateIdentityMetadataResponse> {
    const uid = context.principal.subject!;
    const given = request.body.identityMetadata;
    const fields = maskedFields(given, request.body.updateMask);
    const answer = await context.write(async (writes) => {
      const identity = await writes.get('identities', uid);
      if (!identity) throw unauthenticated('the identity of this token no longer exists');
      const stored: Stored = { ...(identity.metadata ?? {}) };
      let company = identity.company ?? '';
      for (const f of fields) {
        if (f === 'hubspotUtk') continue;
        if (f === 'company') company = given.company ?? '';
        else if (given[f] === undefined) delete stored[f];
        else (stored as Record<string, unknown>)[f] = given[f];
      }
      await writes.update('identities', uid, { company, metadata: stored });
      const shown = {
        ...blank,
        ...stored,
        uid,
        name: identity.name,
        ...splitName(identity.name),
        company,
        hubspotUtk: fields.includes('hubspotUtk') ? (given.hubspotUtk ?? '') : '',
      };
      await writes.recordEvent('identities', uid, shown, 'internal');
      return shown;
    });
    return answer;
  },
};
