// First start: the built-in roles as root records, and on an empty database one organization with an owner.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiModel } from '../model/api-model.js';
import { now } from '../model/records.js';
import type { ServerState } from '../storage/server-state.js';
import type { Sql } from '../storage/sql.js';
import type { Store } from '../storage/store.js';
import { Table } from '../tables/table.js';
import { newChildUid, newRootUid } from '../model/uid.js';

export interface Bootstrap {
  organization: string;
  owner: string;
}

const fileOf = (dataDir: string) => join(dataDir, 'bootstrap.json');

export function readBootstrap(dataDir: string): Bootstrap | undefined {
  const file = fileOf(dataDir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Bootstrap) : undefined;
}

/**
 * Where several instances share a PostgreSQL database, the record is its row of server_state (the data
 * directory's file a copy, for tools and tests that read it there); the first instance to claim the row makes
 * the organization, in the same transaction, and the others read what it made.
 */
export async function sharedBootstrap(shared: ServerState, sql?: Sql): Promise<Bootstrap | undefined> {
  const found = await shared.read(rowName, sql);
  return found && (JSON.parse(found.value) as Bootstrap);
}

const rowName = 'bootstrap';

/** Idempotent: built-in roles follow the spec on every start; the organization is made only once. */
export async function ensureBootstrap(
  store: Store,
  model: ApiModel,
  dataDir: string,
  shared?: ServerState,
): Promise<Bootstrap> {
  const [groups, identities, roles, roleBindings] = ['groups', 'identities', 'roles', 'roleBindings'].map(
    (c) => new Table(store, model.resources[c].type, model.resources[c]),
  );
  const made = await store.transaction(
    async (sql) => {
      const time = now();
      for (const role of model.roles) {
        const fields = { name: role.name, description: role.description, capabilities: role.capabilities };
        if (await roles.get(role.uid, sql)) await roles.update(sql, role.uid, fields);
        else await roles.insert(sql, { uid: role.uid, parentUid: null, createTime: time, updateTime: time, ...fields });
      }
      const existing = shared ? await claimed(shared, sql, dataDir) : readBootstrap(dataDir);
      if (existing) return existing;
      const organization = newRootUid();
      const owner = newRootUid();
      const ownerRoles = model.roles.filter((r) => r.bootstrap);
      if (ownerRoles.length === 0)
        throw new Error('access.yaml declares no role with bootstrap: true, so nobody could use a new server');
      await groups.insert(sql, {
        uid: organization,
        parentUid: null,
        name: 'default',
        description: 'Created on first start',
        createTime: time,
        updateTime: time,
      });
      await identities.insert(sql, {
        uid: owner,
        parentUid: null,
        name: 'owner',
        description: 'Created on first start; get a token with npm run -s token',
        createTime: time,
        updateTime: time,
      });
      for (const role of ownerRoles) {
        await roleBindings.insert(sql, {
          uid: newChildUid(organization),
          parentUid: organization,
          identityUid: owner,
          roleUid: role.uid,
          createTime: time,
          updateTime: time,
        });
      }
      const result = { organization, owner };
      if (shared) await shared.change(rowName, () => JSON.stringify(result), sql);
      else writeFileSync(fileOf(dataDir), `${JSON.stringify(result, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
      return result;
      // SERIALIZABLE: instances starting at once on one database both find no built-in role and no claim; all but
      // one lose that race (a serialization failure, not a duplicate key), are run again and find them made.
    },
    { serializable: true },
  );
  if (shared) {
    // The row stored plain before SECRETS_KEY was set is sealed now, as ensure() does for the other rows.
    await shared.ensure(rowName, () => JSON.stringify(made));
    writeFileSync(fileOf(dataDir), `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600 });
  }
  return made;
}

/**
 * The shared record, or undefined when this transaction claimed the row (an empty value until it commits the
 * organization it makes). A database whose instances shared DATA_DIR before takes its file's record.
 */
async function claimed(shared: ServerState, sql: Sql, dataDir: string): Promise<Bootstrap | undefined> {
  const file = readBootstrap(dataDir);
  if (await shared.insert(sql, rowName, file ? JSON.stringify(file) : '')) return file;
  return sharedBootstrap(shared, sql);
}
