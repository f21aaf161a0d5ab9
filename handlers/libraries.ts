// Artifact counts per ecosystem.
import { equal } from '../runtime/tables/condition.js';
import type { GetArtifactCountRequest, GetArtifactCountResponse, LibrariesHandlers } from '../generated/routes.js';

export const libraries: LibrariesHandlers = {
  async getArtifactCount(request: GetArtifactCountRequest, context): Promise<GetArtifactCountResponse> {
    const artifacts = context.resources.tableOf('artifacts');
    const counts: GetArtifactCountResponse['counts'] = [];
    for (const ecosystem of [...new Set(request.ecosystems)].sort()) {
      counts.push({ ecosystem, totalCount: String(await artifacts.count(equal('ecosystem', ecosystem))) });
    }
    return { counts };
  },
};
