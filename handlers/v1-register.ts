// The reference's registration call, POST /auth/v1/register {code?, identityId?} -> {identity, group}. With an
// invite code it redeems the invite as POST /iam/v2/groupInvites:accept does: the caller is bound to the role the
// invite promises. The caller is the identity of the bearer token (this server registers no new identities).
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Principal } from '../runtime/authorization.js';
import { invalidArgument } from '../runtime/errors.js';
import type { ResourceModel } from '../runtime/model.js';
import { requestBody as body } from '../runtime/route-operations.js';
import { iam } from './iam.js';
import type { V1Deps, V1Extension } from '../runtime/v1/adapter.js';

function addRegisterRoute(router: Router, _invites: ResourceModel, _shape: unknown, { model, resources, policy }: V1Deps): void {
  router.post('/auth/v1/register', async (ctx: Context) => {
    const principal = ctx.state.principal as Principal;
    await policy.requireCapability(principal, 'authenticated', undefined);
    const { code, identityId } = body(ctx);
    const problems = [
      ...(code !== undefined && typeof code !== 'string' ? [{ field: 'code', description: 'code must be a string' }] : []),
      ...(identityId !== undefined && identityId !== '' && identityId !== principal.subject
        ? [{ field: 'identityId', description: 'identityId, when given, must be the identity of the bearer token' }] : []),
    ];
    if (problems.length > 0) throw invalidArgument(problems);
    const identity = principal.subject!;
    let group = '';
    if (code) {
      const context = { principal, store: resources.store, resources, model };
      group = (await iam.acceptGroupInvite({ body: { code: code as string } }, context)).group ?? '';
    }
    await resources.store.transaction((sql) => resources.recordEvent(sql, {
      type: 'dev.chainguard.api.auth.registered.v1', subject: identity, groupUid: group || null, actor: identity, body: { identity, group },
    }));
    ctx.body = { identity, ...(group ? { group } : {}) };
  });
}

export const register: V1Extension = { routes: addRegisterRoute };
