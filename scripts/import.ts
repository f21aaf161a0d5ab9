// npm run import -- <resource> <file> [--parent UID]: loads records (a JSON array or NDJSON) into a resource.
// Every record is checked by the resource's generated record validator, and all are checked before any is
// written; then they are written in short steps, so a server on the same file keeps answering and writing. A
// record with the natural key of a stored one (naturalKey in the spec) replaces it: importing a file twice adds
// nothing, and importing it again completes an import that stopped half-way.
// A record's "parent" is a uid, "$ORG" (the --parent option, or the only organization), or
// "$<type>:<name>" (the record of that type with that name, e.g. "$repo:nginx", looked up within that
// organization when the type lives in one); records without one go under --parent.
import { ConfigError, databaseName, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { and, equal, isNull, range } from '../runtime/tables/condition.js';
import type { ResourceModel } from '../runtime/model/api-model.js';
import type { Row } from '../runtime/model/records.js';
import { loadDataParts, openResources } from '../runtime/operate/open-resources.js';
import type { Resources } from '../runtime/resources/standard-methods.js';
import { descendantRange } from '../runtime/model/uid.js';
import { PartialImport, RecordImport } from '../runtime/resources/record-import.js';
import { loadValidators, violationsOf } from '../runtime/pipeline/validation.js';
import { parseCommandLine } from './cli-args.js';
import { RecordFileError, recordsOf } from './record-file.js';

class ImportError extends Error {}

const { values, positionals } = parseCommandLine({
  name: 'import',
  usage: `
usage: npm run import -- <resource> <file> [--parent UID]
Loads records (a JSON array or NDJSON) into a resource of DATA_DIR (./data); the server may run. Every record
is checked before any is written; an import that stops while writing is completed by importing the file again.
  <resource>     a collection, e.g. advisories, artifacts, images (without arguments: the list)
  --parent UID   the parent of records that name none, and the organization "$ORG" stands for
A record's "parent" is a uid, "$ORG", or "$<type>:<name>" (e.g. "$repo:nginx").`,
  options: { parent: { type: 'string' } },
  allowPositionals: true,
});

/**
 * The uid a record's "parent" names, looked up once per name. A name is looked up within the file's organization
 * (--parent, or the only one) when its type lives in one: a repo named in one tenant's file is never another's.
 */
function parentResolver(resources: Resources, r: ResourceModel) {
  const { model } = resources;
  const cache = new Map<string, string>();
  const byUid = [{ property: 'uid', desc: false }];
  /** --parent, or the only organization; what "$ORG" stands for and where names are looked up. */
  const declared = async (why: string): Promise<string> => {
    if (values.parent) return values.parent;
    const orgs = await resources.table(model.resources.groups.type).find(isNull('parentUid'), byUid, 2);
    if (orgs.length !== 1)
      throw new ImportError(
        `${why} needs --parent UID (there are ${orgs.length === 0 ? 'no' : 'several'} organizations)`,
      );
    return orgs[0].uid as string;
  };
  const named = async (text: string, n: number): Promise<string> => {
    if (text === '$ORG') return declared(`record ${n}: "$ORG"`);
    const m = /^\$(\w+):(.+)$/.exec(text);
    const target = m && Object.values(model.resources).find((x) => x.type.toLowerCase() === m[1].toLowerCase());
    if (!m || !target) throw new ImportError(`record ${n}: parent "${text}" is not a uid, "$ORG" or "$<type>:<name>"`);
    // Records with a parent live in a tenant: looked up there alone. Root records (artifacts) are everyone's.
    const within = target.parent ? await declared(`record ${n}: parent "${text}"`) : undefined;
    const scope = within ? [range('uid', descendantRange(within))] : [];
    const found = await resources.table(target.type).find(and(equal('name', m[2]), ...scope), byUid, 2);
    if (found.length !== 1)
      throw new ImportError(
        `record ${n}: parent "${text}": ${found.length === 0 ? 'no' : 'more than one'} ${target.type} named "${m[2]}"` +
          (within ? ` in ${within}` : ''),
      );
    return found[0].uid as string;
  };
  return async (value: unknown, n: number): Promise<string | undefined> => {
    if (value === undefined || value === null) {
      if (values.parent && r.parent) return values.parent;
      if (r.parent && !r.parentOptional)
        throw new ImportError(
          `record ${n}: parent is required for ${r.collection} (give it in the record or with --parent)`,
        );
      return undefined;
    }
    const text = String(value);
    if (!text.startsWith('$')) return text;
    let uid = cache.get(text);
    if (uid === undefined) cache.set(text, (uid = await named(text, n)));
    return uid;
  };
}

async function main(): Promise<void> {
  const config = readConfig();
  ensureDataDir(config);
  const [collection, file] = positionals;
  const generated = await loadDataParts();
  const { model } = generated;
  const r: ResourceModel | undefined = Object.hasOwn(model.resources, collection ?? '')
    ? model.resources[collection!]
    : undefined;
  // Only a resource with a natural key can be imported: by it a second import finds the records of the first.
  const importable = Object.values(model.resources)
    .filter((x) => x.naturalKey)
    .map((x) => x.collection)
    .sort()
    .join(', ');
  if (!r || !file) {
    throw new ImportError(
      `usage: npm run import -- <resource> <file> [--parent UID]\n  resources that can be imported: ${importable}`,
    );
  }
  if (!r.naturalKey) {
    throw new ImportError(
      `${r.collection} declares no naturalKey in the spec, so a second import could not find the records of the first; resources that do: ${importable}`,
    );
  }
  const validate = loadValidators(generated.dir).body(`${r.collection}.record`)!;
  console.log(`importing ${r.collection} from ${file} into ${databaseName(config.database)}`);
  const { store, resources } = await openResources({ ...config, log: false }, generated);
  const load = new RecordImport(store, resources, r);
  try {
    const resolveParent = parentResolver(resources, r);
    let n = 0;
    for await (const record of recordsOf(file)) {
      n++;
      if (typeof record !== 'object' || record === null || Array.isArray(record))
        throw new ImportError(`record ${n}: not a JSON object`);
      const { parent, ...data } = record as Row;
      if (!validate(data)) {
        const v = violationsOf(validate.errors ?? []);
        throw new ImportError(`record ${n}: ${v.map((x) => x.description).join('; ')}; nothing was imported`);
      }
      await load.add(n, await resolveParent(parent, n), data);
    }
    const { created, updated } = await load.write();
    console.log(`imported ${created + updated} ${r.collection}: ${created} created, ${updated} updated`);
  } finally {
    load.close();
    await store.close();
  }
}

main().catch((e) => {
  if (e instanceof ImportError || e instanceof ConfigError || e instanceof RecordFileError)
    console.error(`import: ${e.message}`);
  else if (e instanceof PartialImport)
    console.error(
      `import stopped after storing ${e.stored} records (import the file again to complete it): ${e.message}`,
    );
  else console.error(`import failed, nothing was imported: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
