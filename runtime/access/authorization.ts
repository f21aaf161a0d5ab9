// Who is calling, and whether they hold an operation's capabilities at a scope. A role binding grants its
// role's capabilities in its group and every group below, within the scope of the bound identity.
import { equal, oneOf, type Condition } from '../tables/condition.js';
import { ApiError, failedPrecondition, invalidArgument, permissionDenied, unauthenticated } from '../model/errors.js';
import { operationOf, type ApiModel, type Capability, type ResourceModel } from '../model/api-model.js';
import { isRootIdentity, mayUseRootIdentity, rootIdentityPlaces, type RootIdentityUse } from './root-identities.js';
import { groupOf } from '../storage/outbox.js';
import type { Row } from '../model/records.js';
import type { Resources, WriteGuard } from '../resources/standard-methods.js';
import type { Sql } from '../storage/sql.js';
import { within } from '../model/uid.js';
import { visibleWhere, type Visible } from '../lists/visibility.js';
import { FreshReads } from './fresh-reads.js';
import { LockedGrants, type GrantRows } from './locked-grants.js';

export interface Principal {
  /** Identity uid from a verified token of an identity that exists; absent for an anonymous caller. */
  subject?: string;
}

/** Whether records of r live in the group tree (groups, and everything whose parent chain reaches a group). */
export function isGroupScoped(model: ApiModel, r: ResourceModel): boolean {
  return r.collection === 'groups' || (!!r.parent && isGroupScoped(model, model.resources[r.parent]));
}

/**
 * The uid a capability is checked at for a record of r: the uid itself, or undefined ("in some group") for
 * records outside the group tree and for public root records such as built-in roles.
 */
export function capabilityScope(model: ApiModel, r: ResourceModel, uid: string | undefined): string | undefined {
  return uid === undefined || !isGroupScoped(model, r) || (r.publicRootRecords && !uid.includes('/')) ? undefined : uid;
}

/** The grants of a subject that is an identity here; UNAUTHENTICATED for one that is not (any more). */
function existing(subject: string, grants: Grants | null): Grants {
  if (!grants) throw unauthenticated(`the token's subject ${subject} is not an identity of this server`);
  return grants;
}

/** Where (groups, by uid) the principal holds each capability. */
interface Grants {
  /** shared between calls: not to be changed */
  groupsHolding(capabilities: string[]): readonly string[];
  /** the group an identity made under a group is confined to; undefined for one made at the root */
  confinedTo?: string;
}

/**
 * The group where a binding at `group` takes effect for an identity confined to `scope` (spec section 4, rule 2):
 * an identity made under a subgroup reaches nothing above or beside it, whatever a binding higher up says.
 */
function effectiveGroup(group: string, scope: string | undefined): string | undefined {
  if (scope === undefined || within(group, scope)) return group;
  return within(scope, group) ? scope : undefined;
}

/** A value other than a field's zero value (what an unset field reads as). */
const isSet = (v: unknown) =>
  v !== undefined && v !== null && v !== false && v !== '' && v !== 0 && !(Array.isArray(v) && v.length === 0);

/** A value to compare, every zero value alike: false given and a field left out are the same. */
const valueOf = (v: unknown) => (isSet(v) ? JSON.stringify(v) : '');

/** The fields of a resource through which a write can make a grant grow, by the flag that declares them. */
interface GrantFields {
  grantsRole: string[];
  grantsCapabilities: string[];
  scopeField?: string;
  assumable: string[];
  /** fields naming an identity (a binding's): a root identity named must be one the caller may read */
  identities: string[];
  /** fields whose setting needs a capability, and the fields that need it while they are set */
  gated: { name: string; capability: string; protects: string[] }[];
}

/** Read once per resource: the guard is built for every create and update. */
const grantFieldsOf = new WeakMap<ResourceModel, GrantFields>();

function grantFields(r: ResourceModel): GrantFields {
  let fields = grantFieldsOf.get(r);
  if (!fields) {
    const named = (flag: 'grantsRole' | 'grantsCapabilities' | 'grantScope' | 'assumable') =>
      Object.entries(r.fields)
        .filter(([, f]) => f[flag])
        .map(([name]) => name);
    fields = {
      grantsRole: named('grantsRole'),
      grantsCapabilities: named('grantsCapabilities'),
      scopeField: named('grantScope')[0],
      assumable: named('assumable'),
      identities: Object.entries(r.fields)
        .filter(([, f]) => f.references === 'identities')
        .map(([name]) => name),
      gated: Object.entries(r.fields).flatMap(([name, f]) =>
        f.requires ? [{ name, capability: f.requires, protects: f.protects ?? [] }] : [],
      ),
    };
    grantFieldsOf.set(r, fields);
  }
  return fields;
}

/** Where the rows grant each capability: a binding's role's capabilities in its group, within the identity's scope. */
function grantsFrom(rows: GrantRows): Grants {
  const scope = rows.confinedTo ?? undefined;
  const byGroup = new Map<string, Set<string>>();
  for (const b of rows.bindings) {
    const g = effectiveGroup(b.parentUid, scope);
    if (g === undefined) continue;
    const set = byGroup.get(g) ?? byGroup.set(g, new Set()).get(g)!;
    for (const c of rows.capabilities.get(b.roleUid) ?? []) set.add(c);
  }
  // Asked once per list of capabilities: the operations' lists are the model's own, asked on every request.
  const holding = new WeakMap<string[], string[]>();
  return {
    confinedTo: scope,
    groupsHolding: (capabilities) => {
      let groups = holding.get(capabilities);
      if (groups === undefined) {
        groups = [...byGroup.entries()].filter(([, caps]) => capabilities.every((c) => caps.has(c))).map(([g]) => g);
        holding.set(capabilities, groups);
      }
      return groups;
    },
  };
}

/** Cached grants are dropped when accessVersion moves (a grant changed here, or another process said so). */
const maxCachedSubjects = 10_000;

/** How long grants are used from the cache at most when no change is heard: a notification lost costs no more. */
export const defaultGrantsTtlMs = 30_000;

export class Policy {
  /** mark: the store's change mark over the grants' tables when they were read (NaN: none) */
  private readonly cache = new Map<string, { grants: Grants | null; until: number; mark: number }>();
  private cachedVersion = -1;
  /** The reads of a refusal: at most one per identity every 100 ms, shared by the refusals waiting for it. */
  private readonly rereads = new FreshReads<string, Grants | null>(100);
  private readonly model: ApiModel;
  /** Where the store keeps one (SQLite): a mark that moves when a row grants are read from may have changed. */
  private readonly storedMark?: () => number;
  /** The built-in roles' capabilities, by uid: the spec's, never changed through the API (so never read). */
  private readonly builtIn: ReadonlyMap<string, string[]>;
  /** Grants by the rows they are made of: each write reads its caller's rows again, the same rows each time. */
  private readonly grantsOfRows = new Map<string, Grants>();

  constructor(
    private readonly resources: Resources,
    private readonly grantsTtlMs = defaultGrantsTtlMs,
  ) {
    this.model = resources.model;
    this.builtIn = new Map(this.model.roles.map((r) => [r.uid, r.capabilities]));
    const { identities, roleBindings, roles } = this.model.resources;
    this.storedMark = resources.changeMark([identities.type, roleBindings.type, roles.type]);
  }

  /**
   * The subject's grants; null when no such identity exists (any more). At once, without a promise, when they
   * are cached: that is nearly every request.
   */
  private grants(subject: string): Grants | null | Promise<Grants | null> {
    const version = this.resources.accessVersion;
    if (version !== this.cachedVersion || this.cache.size >= maxCachedSubjects) {
      this.cache.clear();
      this.cachedVersion = version;
    }
    const cached = this.cache.get(subject);
    const time = Date.now();
    if (cached !== undefined && cached.until > time) return cached.grants;
    const mark = this.storedMark?.() ?? NaN;
    return this.loadGrants(subject).then((grants) => {
      // Only keep what was read at the current version: a write during the read makes it stale.
      if (this.resources.accessVersion === version)
        this.cache.set(subject, { grants, until: time + this.grantsTtlMs, mark });
      return grants;
    });
  }

  /**
   * The subject's grants as stored; with `locked`, read in that write's transaction with the rows that grant
   * them locked until it ends, in one statement (runtime/access/locked-grants.ts): the identity and its bindings
   * cannot be deleted, nor its custom roles changed, before the write commits.
   */
  private async loadGrants(subject: string, locked?: Sql): Promise<Grants | null> {
    if (!locked) {
      const rows = await this.grantRows(subject);
      return rows && this.grantsMadeOf(rows);
    }
    const version = this.resources.accessVersion;
    const mark = this.storedMark?.() ?? NaN;
    const rows = await this.lockedRows().read(locked, subject);
    const grants = rows && this.grantsMadeOf(rows);
    // Read under the write lock at this mark: what the cache keeps from now on. Without it, after another process
    // committed anything (the mark moved), every write read the grants again until the cached ones expired.
    const room = this.cache.size < maxCachedSubjects || this.cache.has(subject);
    if (
      room &&
      mark === this.storedMark?.() &&
      version === this.cachedVersion &&
      version === this.resources.accessVersion
    )
      this.cache.set(subject, { grants, until: Date.now() + this.grantsTtlMs, mark });
    return grants;
  }

  /** The grants the rows make, made once for the same rows. */
  private grantsMadeOf(rows: GrantRows): Grants {
    // A custom role's capabilities are in the key; a built-in role's go by its uid.
    const binding = ({ parentUid, roleUid }: GrantRows['bindings'][number]) =>
      this.builtIn.has(roleUid)
        ? `${parentUid} ${roleUid}`
        : `${parentUid} ${roleUid} ${JSON.stringify(rows.capabilities.get(roleUid))}`;
    const key = [rows.confinedTo ?? '', ...rows.bindings.map(binding).sort()].join('\n');
    let grants = this.grantsOfRows.get(key);
    if (grants === undefined) {
      if (this.grantsOfRows.size >= maxCachedSubjects) this.grantsOfRows.clear();
      grants = grantsFrom(rows);
      this.grantsOfRows.set(key, grants);
    }
    return grants;
  }

  /** The subject's grant rows as stored, outside a transaction (to be cached); null when it does not exist. */
  private async grantRows(subject: string): Promise<GrantRows | null> {
    const { identities, roleBindings, roles } = this.model.resources;
    const identity = await this.resources.table(identities.type).get(subject);
    if (!identity) return null;
    const byUid = [{ property: 'uid', desc: false }];
    const bound = await this.resources.table(roleBindings.type).find(equal('identityUid', subject), byUid, -1);
    const bindings = bound.map((b) => ({ parentUid: b.parentUid as string, roleUid: b.roleUid as string }));
    const capabilities = new Map<string, string[]>();
    const custom: string[] = [];
    for (const { roleUid } of bindings) {
      const builtIn = this.builtIn.get(roleUid);
      if (builtIn) capabilities.set(roleUid, builtIn);
      else if (!custom.includes(roleUid)) custom.push(roleUid);
    }
    const roleRows = custom.length ? await this.resources.table(roles.type).find(oneOf('uid', custom), byUid, -1) : [];
    for (const r of roleRows) capabilities.set(r.uid as string, (r.capabilities as string[] | null) ?? []);
    return { confinedTo: (identity.parentUid as string | null) ?? null, bindings, capabilities };
  }

  private locked?: LockedGrants;
  private lockedRows(): LockedGrants {
    const { identities, roleBindings, roles } = this.model.resources;
    const table = (type: string) => this.resources.table(type);
    return (this.locked ??= new LockedGrants(
      table(identities.type),
      table(roleBindings.type),
      table(roles.type),
      this.builtIn,
    ));
  }

  /**
   * The principal of a verified token's subject: UNAUTHENTICATED if no such identity exists, so a token
   * outlives neither its identity nor a database it was not issued for.
   */
  authenticate(subject: string): Principal | Promise<Principal> {
    const grants = this.grants(subject);
    return grants instanceof Promise
      ? grants.then((g) => this.principalOf(subject, g))
      : this.principalOf(subject, grants);
  }

  private principalOf(subject: string, grants: Grants | null): Principal {
    if (!grants)
      throw unauthenticated(
        `the token's subject ${subject} is not an identity of this server (deleted, or never created here)`,
      );
    return { subject };
  }

  private grantsOf(principal: Principal): Grants | Promise<Grants> {
    const { subject } = principal;
    if (!subject) throw unauthenticated('a bearer token is required (Authorization: Bearer <token>)');
    const grants = this.grants(subject);
    return grants instanceof Promise ? grants.then((g) => existing(subject, g)) : existing(subject, grants);
  }

  /**
   * Throws unless the principal holds every capability at scope (a uid: bindings at it or above it count),
   * or, without a scope, at some group. Checked before anything is looked up, so a caller without the
   * capability learns nothing about whether the resource exists.
   */
  requireCapability(principal: Principal, capability: Capability, scope: string | undefined): Promise<void> | void {
    if (capability === 'none') return;
    // At once when the grants are cached (nearly every request): no promise, no turn of the microtask queue.
    const found = this.grantsOf(principal);
    if (found instanceof Promise) return found.then((grants) => this.holds(grants, capability, scope));
    if (holdsAt(found, capability, scope)) return;
    // Refused on cached grants: read again before refusing. A grant made through another instance a moment ago
    // (an organization just created there, its owner's binding) holds at once, not when that instance's notice
    // arrives; only a refusal pays the read, and the refusals of one identity at once share one
    // (runtime/access/fresh-reads.ts): a flood of refused requests is not a flood of reads. Checks inside a write's
    // transaction never come here: they read the grants as stored, locked (grantWitness, no-escalation).
    const subject = principal.subject!;
    const again = () => (this.cache.delete(subject), Promise.resolve(this.grants(subject)));
    return this.rereads.read(subject, again).then((g) => this.holds(existing(subject, g), capability, scope));
  }

  /**
   * What a write runs first in its transaction: requireCapability again, on the grants as stored, their rows
   * locked until the commit. A binding removed (or its role narrowed) while the write runs waits for the write,
   * or the write sees it gone and is refused: no write commits after the grant it needed was gone.
   */
  grantWitness(
    principal: Principal,
    capability: Capability,
    scope: string | undefined,
  ): ((sql: Sql) => Promise<void>) | undefined {
    const { subject } = principal;
    if (capability === 'none' || capability === 'authenticated' || !subject) return undefined;
    return async (sql) =>
      this.holds(
        existing(subject, this.unchanged(subject) ?? (await this.loadGrants(subject, sql))),
        capability,
        scope,
      );
  }

  /**
   * In a write's transaction: the cached grants, when the store's mark says no row they were read from has
   * changed since (SQLite's one writer holds the write lock, so none changes before the commit either). Reading
   * them again with their rows locked would read the same rows: most of a small write's cost in reads.
   */
  private unchanged(subject: string): Grants | null | undefined {
    const cached = this.cache.get(subject);
    if (cached === undefined || this.cachedVersion !== this.resources.accessVersion) return undefined;
    return cached.mark === this.storedMark?.() ? cached.grants : undefined;
  }

  /** Throws unless the grants hold the capability at the scope, as requireCapability says. */
  private holds(grants: Grants, capability: Exclude<Capability, 'none'>, scope: string | undefined): void {
    if (!holdsAt(grants, capability, scope)) throw refusal(capability, scope);
  }

  /**
   * Throws unless the principal may put the root identity uid to this use (runtime/access/root-identities.ts),
   * with requireCapability's refusal at the uid, whether or not the identity exists.
   */
  async requireOnRootIdentity(
    principal: Principal,
    capability: Capability,
    uid: string,
    use: RootIdentityUse,
  ): Promise<void> {
    if (capability === 'none') return;
    const grants = await this.grantsOf(principal);
    const places = await rootIdentityPlaces(this.resources, uid);
    const holding = (group: string | undefined) => holdsAt(grants, capability, group);
    if (!mayUseRootIdentity(use, uid, places, principal.subject!, holding)) throw refusal(capability, uid);
  }

  /** Whether r's record uid is a root identity, which requireOnRootIdentity authorizes. */
  isRootIdentity(r: ResourceModel, uid: string | undefined): uid is string {
    return isRootIdentity(this.model, r, uid);
  }

  /**
   * A record at the root (an organization, an identity) is outside every group: an identity confined to a group
   * (spec section 4, rule 2) cannot make one, or it could make an unconfined identity for itself.
   */
  async requireUnconfined(principal: Principal, r: ResourceModel): Promise<void> {
    const { confinedTo } = await this.grantsOf(principal);
    if (confinedTo === undefined) return;
    throw failedPrecondition([
      {
        type: 'IDENTITY_CONFINED',
        subject: principal.subject!,
        description: `identity ${principal.subject} is confined to group ${confinedTo} and cannot create a root ${r.type.toLowerCase()}; use an identity made at the root`,
      },
    ]);
  }

  /**
   * No escalation, for every way a write can make a grant grow: a record that grants a role (a binding, an
   * invite, an identity provider's default role) needs a caller who holds that role's capabilities where the
   * record applies, whenever it is created or names another role; a role's new capabilities need a caller who
   * holds them in the role's group and wherever the role is already granted; a field that `requires` a
   * capability (an organization's verified mark) is set or cleared only by a caller who holds it there. Runs in
   * the write's transaction on rows it locks until the commit, so none of what it relied on changes before then:
   * the caller's grants (read as stored, as grantWitness reads them, when a check needs them), the custom roles
   * it reads (FOR SHARE: no widening), the identity's bindings it reads. The rest is locked by the write itself: the record it changes
   * (FOR UPDATE: a role widened, an identity re-pointed) and the records it names (checkReferences, FOR KEY
   * SHARE: a binding's role and identity), so a concurrent grant of that role, or binding of that identity,
   * waits for this write or is seen by it. No write needs SERIALIZABLE for it.
   */
  noEscalation(principal: Principal, r: ResourceModel): WriteGuard | undefined {
    const { grantsRole, grantsCapabilities, scopeField, assumable, identities, gated } = grantFields(r);
    const fields = grantsRole.length + grantsCapabilities.length + assumable.length + identities.length + gated.length;
    if (fields === 0) return undefined;
    return async (sql, next, current) => {
      if (!principal.subject) throw unauthenticated('a bearer token is required (Authorization: Bearer <token>)');
      // Read when a check needs them, once: a write that sets no such field (a repo's create) reads none here.
      let read: Promise<Grants> | undefined;
      const grants = () => (read ??= this.lockedGrants(principal, sql));
      // First: a refusal for another tenant's identity is the one for no identity, before any other check tells.
      for (const name of identities) await this.requireReadableIdentity(principal, grants, sql, name, next, current);
      const group = groupOf(this.model, r, next.uid as string) ?? undefined;
      await requireGated(grants, gated, group, next, current);
      const appliesAt = this.appliesAt(r, next);
      if (scopeField && group !== undefined && !within(appliesAt!, group)) {
        throw invalidArgument([
          { field: scopeField, description: `${scopeField} must be the uid of ${group} or of a group below it` },
        ]);
      }
      const moved = !current || (scopeField !== undefined && current[scopeField] !== next[scopeField]);
      for (const name of grantsRole) {
        const roleUid = next[name];
        if (typeof roleUid !== 'string' || (!moved && current![name] === roleUid)) continue;
        await this.requireRole(await grants(), sql, roleUid, appliesAt);
      }
      for (const name of grantsCapabilities) await this.requireAdded(grants, sql, next, current, name, group);
      const changed = (name: string) => !!current && JSON.stringify(next[name]) !== JSON.stringify(current[name]);
      if (assumable.some(changed)) await this.requireIdentityGrants(await grants(), sql, next.uid as string);
    };
  }

  /** The caller's grants as stored, their rows locked until the write's transaction ends (see loadGrants). */
  private async lockedGrants(principal: Principal, sql: Sql): Promise<Grants> {
    const { subject } = principal;
    if (!subject) throw unauthenticated('a bearer token is required (Authorization: Bearer <token>)');
    return existing(subject, await this.loadGrants(subject, sql));
  }

  /**
   * A root identity named by a field (a binding's identityUid), when set or changed, is one the caller may read:
   * else refused as checkReferences refuses a uid with no identity, so another tenant's identity is not told.
   * An identity made under a group is bound only in that group and below (the field's inScope).
   */
  private async requireReadableIdentity(
    principal: Principal,
    grants: () => Promise<Grants>,
    sql: Sql,
    name: string,
    next: Row,
    current: Row | undefined,
  ): Promise<void> {
    const { identities } = this.model.resources;
    const uid = next[name];
    if (typeof uid !== 'string' || current?.[name] === uid || !isRootIdentity(this.model, identities, uid)) return;
    const capability = operationOf(identities, 'list')!.capability;
    if (capability === 'none') return;
    const held = await grants();
    // Its bindings locked: the places that make it readable stay until the commit.
    const places = await rootIdentityPlaces(this.resources, uid, sql, 'keyShare');
    const holding = (group: string | undefined) => holdsAt(held, capability, group);
    if (!mayUseRootIdentity('read', uid, places, principal.subject!, holding))
      throw invalidArgument([{ field: name, description: `${name}: no ${identities.type.toLowerCase()} ${uid}` }]);
  }

  /**
   * The caller holds every capability of the role at the scope. A custom role is read FOR SHARE: it cannot be
   * widened before this write commits (a widening that went first is read here); built-in roles never change.
   */
  private async requireRole(grants: Grants, sql: Sql, roleUid: string, scope: string | undefined): Promise<void> {
    const caps =
      this.builtIn.get(roleUid) ??
      ((await this.resources.table(this.model.resources.roles.type).get(roleUid, sql, 'share'))?.capabilities as
        string[] | null | undefined) ??
      [];
    if (caps.length > 0) this.holds(grants, caps, scope);
  }

  /**
   * A role's added capabilities are held by the caller in the role's group and wherever the role is granted. The
   * role's row is this write's, locked FOR UPDATE before this runs: a record granting the role (which locks it
   * FOR KEY SHARE) committed before is read here, and one made after waits, then checks the widened role.
   */
  private async requireAdded(
    grants: () => Promise<Grants>,
    sql: Sql,
    next: Row,
    current: Row | undefined,
    name: string,
    group: string | undefined,
  ): Promise<void> {
    const before = new Set((current?.[name] as string[] | null) ?? []);
    const added = ((next[name] as string[] | null) ?? []).filter((c) => !before.has(c));
    if (added.length === 0) return;
    const held = await grants();
    this.holds(held, added, group);
    for (const g of await this.groupsGranting(sql, next.uid as string)) this.holds(held, added, g);
  }

  /**
   * Who may act as an identity (its claimMatch, keys, cloud identity) changes only by a caller who holds what the
   * identity is granted, wherever it is granted: else pointing it at one's own token would take its grants. The
   * identity's row is this write's (FOR UPDATE): a new binding of it (which locks it FOR KEY SHARE) waits or is
   * read here; its bindings are locked against removal, their custom roles against widening.
   */
  private async requireIdentityGrants(grants: Grants, sql: Sql, identityUid: string): Promise<void> {
    const bindings = await this.resources
      .table(this.model.resources.roleBindings.type)
      .findLocked(sql, equal('identityUid', identityUid), 'keyShare');
    for (const b of bindings) await this.requireRole(grants, sql, b.roleUid as string, b.parentUid as string);
  }

  /** The group where a record that grants a role grants it: its declared scope field, else its own group. */
  private appliesAt(r: ResourceModel, row: Row): string | undefined {
    const { scopeField } = grantFields(r);
    const declared = scopeField ? row[scopeField] : undefined;
    return typeof declared === 'string' && declared !== ''
      ? declared
      : (groupOf(this.model, r, row.uid as string) ?? undefined);
  }

  /** The groups where records (bindings, invites, providers) grant the role with this uid. */
  private async groupsGranting(sql: Sql, roleUid: string): Promise<string[]> {
    const groups = new Set<string>();
    for (const other of Object.values(this.model.resources)) {
      for (const [name, f] of Object.entries(other.fields)) {
        if (!f.grantsRole) continue;
        const rows = await this.resources
          .table(other.type)
          .find(equal(name, roleUid), [{ property: 'uid', desc: false }], -1, 0, sql);
        for (const row of rows) {
          const g = this.appliesAt(other, row);
          if (g !== undefined) groups.add(g);
        }
      }
    }
    return [...groups].sort();
  }

  /**
   * The conditions that limit a list to what the principal may see, or undefined when it may see nothing.
   * Records outside the group tree (library artifacts) are visible to anyone holding the capability somewhere.
   * `confinedTo`: the group the list is confined to (descendants_of or children_of), when it is.
   */
  async visibility(
    principal: Principal,
    capability: Capability,
    r: ResourceModel,
    confinedTo?: string,
  ): Promise<Condition[] | undefined> {
    const visible = await this.visibleScopes(principal, capability, r, confinedTo);
    return visible && visibleWhere(visible);
  }

  /** What of r the caller may list: all of it, or the records in and below some groups; undefined: none. */
  async visibleScopes(
    principal: Principal,
    capability: Capability,
    r: ResourceModel,
    confinedTo?: string,
  ): Promise<Visible | undefined> {
    if (capability === 'none') return { all: true };
    const grants = await this.grantsOf(principal);
    if (capability === 'authenticated') return { all: true };
    const groups = grants.groupsHolding(capability);
    if (groups.length === 0) return undefined;
    if (!isGroupScoped(this.model, r)) return { all: true };
    // A list already confined below a group where the capability is held needs no condition of ours.
    if (confinedTo && groups.some((g) => within(confinedTo, g))) return { all: true };
    return { all: false, groups, publicRootRecords: r.publicRootRecords };
  }
}

/** A field that `requires` a capability is set or cleared only by a caller holding it in the record's group. */
async function requireGated(
  grants: () => Promise<Grants>,
  gated: GrantFields['gated'],
  group: string | undefined,
  next: Row,
  current: Row | undefined,
): Promise<void> {
  for (const { name, capability, protects } of gated) {
    const changed = (field: string) => valueOf(next[field]) !== valueOf(current?.[field]);
    // Either way: taking the mark away (a PUT that leaves it out, a mask naming it) needs the capability too.
    const what = changed(name)
      ? `changing ${name}`
      : current && isSet(current[name]) && protects.some(changed)
        ? `changing ${protects.filter(changed).join(', ')} while ${name} is set`
        : undefined;
    if (what && !holdsAt(await grants(), [capability], group)) throw permissionDenied(`${what} needs ${capability}`);
  }
}

/** Whether the grants hold the capability at scope (a uid: bindings at it or above it count), or in some group. */
function holdsAt(grants: Grants, capability: Exclude<Capability, 'none'>, scope: string | undefined): boolean {
  if (capability === 'authenticated') return true;
  const groups = grants.groupsHolding(capability);
  return scope === undefined ? groups.length > 0 : groups.some((g) => within(scope, g));
}

/** The refusal of a caller without the capability at scope. */
function refusal(needed: Exclude<Capability, 'none'>, scope: string | undefined): ApiError {
  const capability = needed === 'authenticated' ? ['access'] : needed;
  return permissionDenied(
    `${capability.join(' and ')} ${capability.length > 1 ? 'are' : 'is'} required ${scope === undefined ? 'in some group' : `at ${scope}`}`,
  );
}
