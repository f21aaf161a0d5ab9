// The reference's registration call, POST /auth/v1/register {code?, identityId?} -> {identity, group}. With an
// invite code it redeems the invite as POST /iam/v2/groupInvites:accept does: the caller is bound to the role the
// invite promises. The caller is the identity of the bearer token (this server registers no new identities).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { invalidArgument } from '../runtime/errors.js';
import type { ResourceModel } from '../runtime/model.js';
import type { EndpointHandler } from '../runtime/operations.js';
import { callOf } from '../runtime/route-operations.js';
import { iam } from './iam.js';
import type { V1Deps, V1Extension } from '../runtime/v1/adapter.js';

/** The reference's event of a registration (v1 only: no v2 operation declares it). */
const registeredEvent = 'dev.chainguard.api.auth.registered.v1';

function addRegisterRoute(
  router: Router,
  _invites: ResourceModel,
  _shape: unknown,
  { model, resources, policy, operations }: V1Deps,
): void {
  const accept = model.endpoints.find((e) => e.domain === 'iam' && e.name === 'acceptGroupInvite')!;
  router.post('/auth/v1/register', async (ctx: Context) => {
    const call = callOf(ctx, []);
    const { principal } = call;
    await policy.requireCapability(principal, 'authenticated', undefined);
    const { code, identityId } = call.body;
    const problems = [
      ...(code !== undefined && typeof code !== 'string'
        ? [{ field: 'code', description: 'code must be a string' }]
        : []),
      ...(identityId !== undefined && identityId !== '' && identityId !== principal.subject
        ? [{ field: 'identityId', description: 'identityId, when given, must be the identity of the bearer token' }]
        : []),
    ];
    if (problems.length > 0) throw invalidArgument(problems);
    const identity = principal.subject!;
    // Redeeming the code is the v2 call, through the same pipeline.
    const accepted = code
      ? ((await operations.endpoint(
          accept,
          { ...call, query: {}, body: { code } },
          iam.acceptGroupInvite as EndpointHandler,
        )) as { group?: string })
      : {};
    const group = accepted.group ?? '';
    await resources.write({ type: registeredEvent, actor: identity }, (writes) =>
      writes.recordEvent(model.resources.identities, identity, { identity, group }),
    );
    ctx.body = { identity, ...(group ? { group } : {}) };
  });
}

export const register: V1Extension = { routes: addRegisterRoute };
