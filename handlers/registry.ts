// Images: an image index's architectures and per-architecture size, read from imported records.
import type { GetArchitecturesRequest, GetArchitecturesResponse, GetSizeRequest, GetSizeResponse, RegistryHandlers } from '../generated/routes.js';
import { invalidArgument, notFound } from '../runtime/errors.js';
import type { HandlerContext } from '../runtime/route-operations.js';

interface ImageRow { architectures?: string[] | null; sizes?: Record<string, string> | null }

async function findImage(repoUid: string, digest: string, context: HandlerContext): Promise<ImageRow> {
  const image = context.model.resources.images;
  const [row] = await context.resources.table(image.type).find({ parentUid: repoUid, digest }, [{ property: 'uid', desc: false }], 1) as ImageRow[];
  if (!row) throw notFound(image.type, `${repoUid}@${digest}`);
  return row;
}

export const registry: RegistryHandlers = {
  async getArchitectures(request: GetArchitecturesRequest, context): Promise<GetArchitecturesResponse> {
    const row = await findImage(request.repoUid, request.digest, context);
    return { architectures: [...(row.architectures ?? [])].sort() };
  },

  async getSize(request: GetSizeRequest, context): Promise<GetSizeResponse> {
    const row = await findImage(request.repoUid, request.digest, context);
    const sizes = row.sizes ?? {};
    const known = Object.keys(sizes).sort();
    const architecture = request.architecture ?? (known.length === 1 ? known[0] : undefined);
    if (architecture === undefined) {
      throw invalidArgument([{ field: 'architecture', description: `architecture is required for a multi-architecture image (${known.join(', ')})` }]);
    }
    if (!(architecture in sizes)) throw notFound('ImageArchitecture', `${request.repoUid}@${request.digest} ${architecture}`);
    return { architecture, size: String(sizes[architecture]) };
  },
};
