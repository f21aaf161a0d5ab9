// v1's ListEolTags, GET /registry/v1/eoltags (declared in spec/registry.yaml): the tags marked deprecated, with the
// end-of-life data imported for them, paged as the v2 list is. v2 has no such call (its callers filter
// Tag.deprecated themselves). The pipeline validates the list query and confines the read to visible tags.
import type { ListEolTagsResponse, RegistryHandlers } from '../generated/routes.js';
import { equal } from '../runtime/tables/condition.js';
import { parseListRequest } from '../runtime/lists/list-request.js';

export const eolTags: Pick<RegistryHandlers, 'listEolTags'> = {
  async listEolTags(query, { model, resources, visible }) {
    const tags = model.resources.tags;
    const page = await resources.list(tags, parseListRequest(query, tags), [...visible, equal('deprecated', true)]);
    return {
      items: page.items.map((t) => ({
        id: t.uid,
        name: t.name,
        mainPackageName: t.mainPackageName ?? '',
        gracePeriodExpiryDate: t.gracePeriodExpiryDate,
      })),
      nextPageToken: page.nextPageToken,
    } as ListEolTagsResponse;
  },
};
