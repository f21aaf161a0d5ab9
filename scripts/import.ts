// npm run import -- <resource> <file> [--parent UID]: loads records (a JSON array or NDJSON) into a resource.
// Every record is checked by the resource's generated record validator; the file loads all or nothing. A record
// with the natural key of a stored one (naturalKey in the spec) replaces it: importing a file twice adds nothing.
// A record's "parent" is a uid, "$ORG" (the --parent option, or the only organization), or
// "$<type>:<name>" (the record of that type with that name, e.g. "$repo:nginx"); records without one go
// under --parent.
import { readFileSync } from 'node:fs';
import { ConfigError, ensureDataDir, readConfig } from '../runtime/config.js';
import { equal, isNull } from '../runtime/condition.js';
import type { ResourceModel } from '../runtime/model.js';
import type { Row } from '../runtime/records.js';
import { loadDataParts, openResources } from '../runtime/open-resources.js';
import { loadValidators, violationsOf } from '../runtime/validation.js';
import { parseCommandLine } from './cli-args.js';

class ImportError extends Error {}

function parseRecords(file: string): Row[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ImportError(`cannot read ${file}: ${(e as Error).message}`);
  }
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    try {
      return JSON.parse(trimmed) as Row[];
    } catch (e) {
      throw new ImportError(`${file} is not valid JSON: ${(e as Error).message}`);
    }
  }
  const records: Row[] = [];
  trimmed.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      records.push(JSON.parse(line) as Row);
    } catch (e) {
      throw new ImportError(`${file}:${i + 1}: not a JSON record: ${(e as Error).message}`);
    }
  });
  return records;
}

const { values, positionals } = parseCommandLine({
  name: 'import',
  usage: `
usage: npm run import -- <resource> <file> [--parent UID]
Loads records (a JSON array or NDJSON) into a resource of DATA_DIR (./data), all or nothing; the server may run.
  <resource>     a collection, e.g. advisories, artifacts, images (without arguments: the list)
  --parent UID   the parent of records that name none, and the organization "$ORG" stands for
A record's "parent" is a uid, "$ORG", or "$<type>:<name>" (e.g. "$repo:nginx").`,
  options: { parent: { type: 'string' } },
  allowPositionals: true,
});

async function main(): Promise<void> {
  const config = readConfig();
  ensureDataDir(config);
  const [collection, file] = positionals;
  const generated = await loadDataParts();
  const { model } = generated;
  const r: ResourceModel | undefined = Object.hasOwn(model.resources, collection ?? '')
    ? model.resources[collection!]
    : undefined;
  if (!r || !file) {
    throw new ImportError(
      `usage: npm run import -- <resource> <file> [--parent UID]\n  resources: ${Object.keys(model.resources).sort().join(', ')}`,
    );
  }
  if (!r.naturalKey) {
    throw new ImportError(
      `${r.collection} declares no naturalKey in the spec, so a second import could not find the records of the first; resources that do: ${Object.values(
        model.resources,
      )
        .filter((x) => x.naturalKey)
        .map((x) => x.collection)
        .sort()
        .join(', ')}`,
    );
  }
  const records = parseRecords(file);
  const validate = loadValidators(generated.dir).body(`${r.collection}.record`)!;
  for (const [i, record] of records.entries()) {
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      throw new ImportError(`record ${i + 1}: not a JSON object`);
    const { parent: _parent, ...data } = record;
    if (!validate(data)) {
      const v = violationsOf(validate.errors ?? []);
      throw new ImportError(`record ${i + 1}: ${v.map((x) => x.description).join('; ')}; nothing was imported`);
    }
  }

  console.log(`importing ${records.length} ${r.collection} from ${file} into ${config.databaseFile}`);
  const { store, resources } = await openResources({ ...config, log: false }, generated);
  try {
    const cache = new Map<string, string>();
    const byUid = [{ property: 'uid', desc: false }];
    const resolveParent = async (value: unknown, i: number): Promise<string | undefined> => {
      if (value === undefined || value === null) {
        if (values.parent && r.parent) return values.parent;
        if (r.parent && !r.parentOptional)
          throw new ImportError(
            `record ${i + 1}: parent is required for ${r.collection} (give it in the record or with --parent)`,
          );
        return undefined;
      }
      const text = String(value);
      if (!text.startsWith('$')) return text;
      if (cache.has(text)) return cache.get(text);
      let uid: string | undefined;
      if (text === '$ORG') {
        if (values.parent) uid = values.parent;
        else {
          const orgs = await resources.table(model.resources.groups.type).find(isNull('parentUid'), byUid, 2);
          if (orgs.length !== 1)
            throw new ImportError(
              `record ${i + 1}: "$ORG" needs --parent UID (there are ${orgs.length === 0 ? 'no' : 'several'} organizations)`,
            );
          uid = orgs[0].uid as string;
        }
      } else {
        const m = /^\$(\w+):(.+)$/.exec(text);
        const target = m && Object.values(model.resources).find((x) => x.type.toLowerCase() === m[1].toLowerCase());
        if (!m || !target)
          throw new ImportError(`record ${i + 1}: parent "${text}" is not a uid, "$ORG" or "$<type>:<name>"`);
        const found = await resources.table(target.type).find(equal('name', m[2]), byUid, 2);
        if (found.length !== 1)
          throw new ImportError(
            `record ${i + 1}: parent "${text}": ${found.length === 0 ? 'no' : 'more than one'} ${target.type} named "${m[2]}"`,
          );
        uid = found[0].uid as string;
      }
      cache.set(text, uid!);
      return uid;
    };
    const prepared: { parent?: string; data: Row }[] = [];
    for (const [i, { parent, ...data }] of records.entries())
      prepared.push({ parent: await resolveParent(parent, i), data });
    const { created, updated } = await resources.importRecords(r, prepared);
    console.log(`imported ${created + updated} ${r.collection}: ${created} created, ${updated} updated`);
  } finally {
    await store.close();
  }
}

main().catch((e) => {
  if (e instanceof ImportError || e instanceof ConfigError) console.error(`import: ${e.message}`);
  else console.error(`import failed, nothing was imported: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
