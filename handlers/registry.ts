// Images: an image index's architectures and per-architecture size, read from imported records.
import type {
  GetArchitecturesRequest,
  GetArchitecturesResponse,
  GetSizeRequest,
  GetSizeResponse,
  RegistryHandlers,
} from '../generated/routes.js';
import { matching } from '../runtime/tables/condition.js';
import { invalidArgument, notFound } from '../runtime/model/errors.js';
import type { HandlerContext } from '../runtime/http/route-operations.js';
import type { ImageRecord } from '../generated/types.js';

async function findImage(repoUid: string, digest: string, context: HandlerContext): Promise<ImageRecord> {
  const [image] = await context.resources
    .tableOf('images')
    .find(matching({ parentUid: repoUid, digest }), [{ property: 'uid', desc: false }], 1);
  if (!image) throw notFound(context.model.resources.images.type, `${repoUid}@${digest}`);
  return image;
}

/** The v1-only calls are in handlers/v1-*.ts. */
export const registry: Omit<
  RegistryHandlers,
  'listEolTags' | 'getVulnReport' | 'listVulnReports' | 'countVulnReports'
> = {
  async getArchitectures(request: GetArchitecturesRequest, context): Promise<GetArchitecturesResponse> {
    const image = await findImage(request.repoUid, request.digest, context);
    return { architectures: [...(image.architectures ?? [])].sort() };
  },

  async getSize(request: GetSizeRequest, context): Promise<GetSizeResponse> {
    const image = await findImage(request.repoUid, request.digest, context);
    const sizes = image.sizes ?? {};
    const known = Object.keys(sizes).sort();
    const architecture = request.architecture ?? (known.length === 1 ? known[0] : undefined);
    if (architecture === undefined) {
      throw invalidArgument([
        {
          field: 'architecture',
          description: `architecture is required for a multi-architecture image (${known.join(', ')})`,
        },
      ]);
    }
    if (!(architecture in sizes))
      throw notFound('ImageArchitecture', `${request.repoUid}@${request.digest} ${architecture}`);
    return { architecture, size: sizes[architecture] };
  },
};
