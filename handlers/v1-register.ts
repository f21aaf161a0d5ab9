// The reference's registration call, POST /auth/v1/register {code?, identityId?} -> {identity, group} (declared in
// spec/iam.yaml as a v1 endpoint; its event is the endpoint's). With an invite code it redeems the invite as
// POST /iam/v2/groupInvites:accept does: the caller is bound to the role the invite promises. The caller is the
// identity of the bearer token (this server registers no new identities).
import type { IamHandlers, RegisterResponse } from '../generated/routes.js';
import { invalidArgument } from '../runtime/model/errors.js';
import type { EndpointHandler } from '../runtime/pipeline/operations.js';
import { iam } from './iam.js';

export const register: Pick<IamHandlers, 'register'> = {
  async register({ body: { code, identityId } }, context) {
    const { principal, model } = context;
    if (identityId !== undefined && identityId !== '' && identityId !== principal.subject)
      throw invalidArgument([
        { field: 'identityId', description: 'identityId, when given, must be the identity of the bearer token' },
      ]);
    const identity = principal.subject!;
    // Redeeming the code is the v2 call, through the same pipeline (its checks, its event).
    const accept = model.endpoints.find((e) => e.domain === 'iam' && e.name === 'acceptGroupInvite')!;
    const accepted = code
      ? ((await context.run(accept, { code }, iam.acceptGroupInvite as EndpointHandler)) as { group?: string })
      : {};
    const group = accepted.group ?? '';
    await context.write((writes) => writes.recordEvent('identities', identity, { identity, group }));
    // v1 leaves the group out when no invite was redeemed.
    return { identity, ...(group ? { group } : {}) } as RegisterResponse;
  },
};
