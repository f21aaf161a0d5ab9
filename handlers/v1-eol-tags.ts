// v1's ListEolTags, GET /registry/v1/eoltags: the tags marked deprecated, with the end-of-life data imported
// for them, paged as the v2 list is. v2 has no such call (its callers filter Tag.deprecated themselves).
import type Router from '@koa/router';
import type { Principal } from '../runtime/authorization.js';
import { parseListRequest } from '../runtime/list-request.js';
import type { ResourceModel } from '../runtime/model.js';
import { check } from '../runtime/validation.js';
import type { V1Deps, V1Extension } from '../runtime/v1/adapter.js';

function addEolTagsRoute(
  router: Router,
  tags: ResourceModel,
  _shape: unknown,
  { resources, policy, validators }: V1Deps,
): void {
  router.get('/registry/v1/eoltags', async (ctx) => {
    const query: Record<string, unknown> = { ...ctx.query };
    check(validators.query(`${tags.collection}.list`)!, query);
    const req = parseListRequest(query, tags);
    const visible = await policy.visibility(ctx.state.principal as Principal, tags.operations.list!.capability, tags);
    if (!visible) {
      ctx.body = { items: [], nextPageToken: '' };
      return;
    }
    const page = await resources.list(tags, req, [...visible, { deprecated: true }]);
    ctx.body = {
      items: page.items.map((t) => ({
        id: t.uid,
        name: t.name,
        mainPackageName: t.mainPackageName ?? '',
        gracePeriodExpiryDate: t.gracePeriodExpiryDate,
      })),
      nextPageToken: page.nextPageToken,
    };
  });
}

export const eolTags: V1Extension = { routes: addEolTagsRoute };
