// What keeps the records whole, checked inside a write's transaction: at most one field of an exclusive group set,
// references that name a record in reach, a natural key held by one record, and deletes that respect children
// (restrict blocks, cascade takes them along) and the records that reference the deleted one.
import { failedPrecondition, invalidArgument, type PreconditionViolation } from '../model/errors.js';
import type { ApiModel, FieldModel, ResourceModel } from '../model/api-model.js';
import { fieldList, type Row } from '../model/records.js';
import { isUidPath, within } from '../model/uid.js';
import { isDuplicateKey } from '../storage/duplicate-key.js';
import { alreadyExists } from '../storage/natural-keys.js';
import { groupOf } from '../storage/outbox.js';
import type { Sql } from '../storage/sql.js';
import { equal } from '../tables/condition.js';
import type { Table } from '../tables/table.js';

/** The model and its tables, which the checks read. */
export interface ModelTables {
  readonly model: ApiModel;
  table(entity: string): Table;
}

/** At most one field of each exclusive group may be set. */
export function checkExclusive(r: ResourceModel, data: Row): void {
  for (const group of r.exclusive) {
    const set = group.filter((f) => data[f] !== undefined && data[f] !== null);
    if (set.length > 1)
      throw invalidArgument(
        set.map((f) => ({ field: f, description: `${f}: only one of ${group.join(', ')} may be set` })),
      );
  }
}

/**
 * Fields that name another record must name one that exists; an `inScope` reference must name a record of
 * this record's group or of a group above it (an identity made under a subgroup is not bound above it).
 */
export function checkReferences(tables: ModelTables, sql: Sql, r: ResourceModel, data: Row): Promise<void> | undefined {
  // Most resources name no other record: nothing to wait for (no promise, no turn of the event loop).
  const named = referenceFields(r).filter(([name]) => data[name] !== undefined && data[name] !== null);
  return named.length > 0 ? checkNamed(tables, sql, r, data, named) : undefined;
}

const referenceLists = new WeakMap<ResourceModel, [string, FieldModel][]>();

/** The fields of a resource that name another record, listed once. */
function referenceFields(r: ResourceModel): [string, FieldModel][] {
  let list = referenceLists.get(r);
  if (!list) referenceLists.set(r, (list = fieldList(r.fields).filter(([, f]) => f.references)));
  return list;
}

async function checkNamed(
  tables: ModelTables,
  sql: Sql,
  r: ResourceModel,
  data: Row,
  named: [string, FieldModel][],
): Promise<void> {
  const { model } = tables;
  for (const [name, f] of named) {
    const target = model.resources[f.references!];
    const uid = String(data[name]);
    const missing = () =>
      invalidArgument([{ field: name, description: `${name}: no ${target.type.toLowerCase()} ${uid}` }]);
    if (!isUidPath(uid)) throw missing();
    // Where a record lives is in its uid: out of scope is said before any lookup, so the answer does not tell
    // whether a record exists in a group the caller cannot see.
    const home = f.inScope ? groupOf(model, target, uid) : null;
    const group = groupOf(model, r, data.uid as string);
    if (home !== null && group !== null && !within(group, home)) {
      throw invalidArgument([
        {
          field: name,
          description: `${name}: ${uid} is not a ${target.type.toLowerCase()} of ${group} or of a group above it`,
        },
      ]);
    }
    // A grant's scope lies in this record's group: said before the lookup too, so another tenant's group is
    // refused as one that does not exist is not.
    if (f.grantScope && group !== null && !within(uid, group))
      throw invalidArgument([
        { field: name, description: `${name} must be the uid of ${group} or of a group below it` },
      ]);
    // Locked: the record named cannot be deleted before this write commits.
    if (!(await tables.table(target.type).get(uid, sql, 'keyShare'))) throw missing();
  }
}

/** The natural key's properties and this record's values of them; undefined for a resource without one. */
export function naturalKeyValues(r: ResourceModel, data: Row): Row | undefined {
  if (!r.naturalKey || r.upsertOn) return undefined;
  return Object.fromEntries(
    r.naturalKey.map((k) => (k === 'parent' ? ['parentUid', data.parentUid ?? null] : [k, data[k] ?? null])),
  );
}

/** A key as the API names it: parent, not parentUid. */
const shownKey = (key: Row) =>
  Object.fromEntries(Object.entries(key).map(([k, v]) => [k === 'parentUid' ? 'parent' : k, v]));

/**
 * ALREADY_EXISTS when another record has this one's natural key (a repo's parent and name). The key's unique
 * index refuses the twin that a concurrent create commits between this read and the insert (refuseTwin).
 */
export async function refuseTakenKey(tables: ModelTables, sql: Sql, r: ResourceModel, data: Row): Promise<void> {
  const key = naturalKeyValues(r, data);
  if (key && (await tables.table(r.type).lastWith(sql, key))) throw alreadyExists(r.type, shownKey(key));
}

/** The insert's unique-key violation (a twin committed meanwhile by another writer) as ALREADY_EXISTS. */
export async function refuseTwin(r: ResourceModel, data: Row, insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (e) {
    const key = naturalKeyValues(r, data);
    if (key && isDuplicateKey(e)) throw alreadyExists(r.type, shownKey(key));
    throw e;
  }
}

/**
 * Restricting children and records referencing it block the delete (FAILED_PRECONDITION, nothing deleted);
 * cascading children go with their parent, `deleted` told of each (to record its own declared delete event: a
 * subscriber to tags hears of the tags a repo's delete took).
 */
export async function deleteWithChildren(
  tables: ModelTables,
  sql: Sql,
  r: ResourceModel,
  uid: string,
  deleted: (child: ResourceModel, uid: string) => Promise<void>,
): Promise<void> {
  const { model } = tables;
  const violations: PreconditionViolation[] = [];
  for (const childName of r.children) {
    const child = model.resources[childName];
    if (child.onParentDelete !== 'restrict') continue;
    const where = equal(child.uid === 'parent' ? 'uid' : 'parentUid', uid);
    if ((await tables.table(child.type).count(where, sql)) > 0) {
      violations.push({
        type: 'RESOURCE_NOT_EMPTY',
        subject: uid,
        description: `cannot delete ${r.type.toLowerCase()} with child ${child.collection}`,
      });
    }
  }
  for (const other of Object.values(model.resources)) {
    for (const [name, f] of Object.entries(other.fields)) {
      if (f.references === r.collection && (await tables.table(other.type).count(equal(name, uid), sql)) > 0) {
        violations.push({
          type: 'RESOURCE_IN_USE',
          subject: uid,
          description: `cannot delete ${r.type.toLowerCase()} still referenced by ${other.collection}`,
        });
      }
    }
  }
  if (violations.length > 0) throw failedPrecondition(violations);
  for (const childName of r.children) {
    const child = model.resources[childName];
    if (child.onParentDelete !== 'cascade') continue;
    const rows = await tables
      .table(child.type)
      .find(equal('parentUid', uid), [{ property: 'uid', desc: false }], -1, 0, sql);
    for (const { uid: childUid } of rows as { uid: string }[]) {
      await deleteWithChildren(tables, sql, child, childUid, deleted);
      await deleted(child, childUid);
    }
  }
  await tables.table(r.type).delete(sql, uid);
}
