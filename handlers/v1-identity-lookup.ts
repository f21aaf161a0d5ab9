// v1's Identities/Lookup, GET /iam/v1/identities/lookup?issuer=&subject= (the reference's provider finds identities
// with it): the identity v2's identities:lookupIdentity finds, read and answered whole in v1's shape. The endpoint
// decides who may see what (handlers/iam.ts); the read goes through the same get as any v1 read.
import type { Router } from '../runtime/http/router.js';
import type { V1Deps, V1Extension, V1Presenter } from '../runtime/http/v1/adapter.js';
import type { ResourceModel } from '../runtime/model/api-model.js';
import { callOf } from '../runtime/http/route-operations.js';
import { iam } from './iam.js';

function addLookupRoute(router: Router, r: ResourceModel, shape: V1Presenter, { model, operations }: V1Deps): void {
  const lookup = model.endpoints.find((e) => e.domain === r.domain && e.name === 'lookupIdentity')!;
  router.get('/iam/v1/identities/lookup', async (ctx) => {
    const call = callOf(ctx, [], {});
    const { uid } = (await operations.endpoint(lookup, call, (request, context) =>
      iam.lookupIdentity(request as never, context),
    )) as { uid: string };
    ctx.body = shape.out(await operations.get(r, { ...call, query: {}, params: { uid } }));
  });
}

export const identityLookup: V1Extension = { routes: addLookupRoute };
