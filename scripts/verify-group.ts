// npm run -s verify-group -- UID [--unverify]: marks an organization verified (or no longer), the operator's
// counterpart of the reference's "Chainguard staff only". Over the API, setting `verified` needs CAP_INTERNAL,
// which no customer role holds. Reads DATA_DIR or DATABASE_URL; works whether or not the server runs.
import type { GroupRecord } from '../generated/types.js';
import { ConfigError, databaseName, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { and, equal, isNull } from '../runtime/tables/condition.js';
import { loadDataParts, openResources } from '../runtime/operate/open-resources.js';
import { now, toResource } from '../runtime/model/records.js';
import { isUidPath } from '../runtime/model/uid.js';
import { parseCommandLine } from './cli-args.js';

class VerifyError extends Error {}

const { values, positionals } = parseCommandLine({
  name: 'verify-group',
  usage: `
usage: npm run -s verify-group -- UID [--unverify]
Marks the organization (root group) UID verified, so that callers whose trusted email has its name as domain find
it with groups:lookupGroup and may ask to join it (docs/access-control.md, "Organizations found by email"). Its name must be a
domain (example.com) that no other verified organization has.
  --unverify   takes the mark away
Reads DATA_DIR (./data) or DATABASE_URL; the server need not stop. The change is recorded as the group's
dev.chainguard.api.iam.group.updated.v1 event.`,
  options: { unverify: { type: 'boolean', default: false } },
  allowPositionals: true,
});

const domainName = /^[a-z0-9-]+(\.[a-z0-9-]+)+$/;

async function main(): Promise<void> {
  const [uid, ...extra] = positionals;
  if (!uid || extra.length > 0) throw new VerifyError('give one organization uid; see --help');
  if (!isUidPath(uid) || uid.includes('/'))
    throw new VerifyError(`"${uid}" is not the uid of an organization (40 hex characters, a root group)`);
  const config = readConfig();
  ensureDataDir(config);
  const generated = await loadDataParts();
  const { store, resources } = await openResources({ ...config, log: false }, generated);
  const groups = generated.model.resources.groups;
  const verified = !values.unverify;
  try {
    const changed = await resources.write({ type: groups.operations.update?.event }, async (writes) => {
      const group = await writes.get('groups', uid);
      if (!group) throw new VerifyError(`no organization ${uid} in ${databaseName(config.database)}`);
      if (!!group.verified === verified) return false;
      if (verified && !domainName.test(group.name))
        throw new VerifyError(`its name "${group.name}" is not a domain such as example.com`);
      const others = verified
        ? await writes.find(
            'groups',
            and<GroupRecord>(equal('name', group.name), isNull('parentUid'), equal('verified', true)),
            1,
          )
        : [];
      if (others.length > 0)
        throw new VerifyError(`organization ${others[0].uid} is verified with the name "${group.name}" already`);
      const updateTime = now();
      await writes.update('groups', uid, { verified, updateTime });
      await writes.recordEvent('groups', uid, toResource({ ...group, verified, updateTime }, groups));
      return true;
    });
    process.stdout.write(`${uid} ${changed ? 'is now' : 'was already'} ${verified ? 'verified' : 'not verified'}\n`);
  } finally {
    await store.close();
  }
}

main().catch((e) => {
  console.error(`verify-group: ${e instanceof VerifyError || e instanceof ConfigError ? e.message : String(e)}`);
  process.exit(1);
});
