// Who is calling, and whether they hold an operation's capabilities at a scope. A role binding grants its
// role's capabilities in its group and every group below.
import { permissionDenied, unauthenticated } from './errors.js';
import type { ApiModel, Capability, ResourceModel } from './model.js';
import type { Row } from './records.js';
import type { Store } from './store.js';
import { descendantRange } from './uid.js';

export interface Principal {
  /** Identity uid from a verified token; absent for an anonymous caller. */
  subject?: string;
  /** Why the presented credentials were refused, if they were. */
  refused?: string;
}

type Where = Record<string, unknown>;

/** Whether records of r live in the group tree (groups, and everything whose parent chain reaches a group). */
export function isGroupScoped(model: ApiModel, r: ResourceModel): boolean {
  return r.collection === 'groups' || (!!r.parent && isGroupScoped(model, model.resources[r.parent]));
}

/** Where (groups, by uid) the principal holds each capability. */
interface Grants {
  groupsHolding(capabilities: string[]): string[];
}

/**
 * The uid a capability is checked at for a record of r: the uid itself, or undefined ("in some group") for
 * records outside the group tree and for public root records such as built-in roles.
 */
export function capabilityScope(model: ApiModel, r: ResourceModel, uid: string | undefined): string | undefined {
  return uid === undefined || !isGroupScoped(model, r) || (r.publicRootRecords && !uid.includes('/')) ? undefined : uid;
}

/** Cached grants are dropped when accessVersion moves (a binding, role or group was written). */
const maxCachedSubjects = 10_000;

export class Policy {
  private readonly cache = new Map<string, Grants>();
  private cachedVersion = -1;

  constructor(private readonly store: Store, private readonly model: ApiModel, private readonly accessVersion: () => number) {}

  private async grants(subject: string): Promise<Grants> {
    const version = this.accessVersion();
    if (version !== this.cachedVersion || this.cache.size >= maxCachedSubjects) {
      this.cache.clear();
      this.cachedVersion = version;
    }
    const cached = this.cache.get(subject);
    if (cached) return cached;
    const grants = await this.loadGrants(subject);
    // Only keep what was read at the current version: a write during the read makes it stale.
    if (this.accessVersion() === version) this.cache.set(subject, grants);
    return grants;
  }

  private async loadGrants(subject: string): Promise<Grants> {
    const em = this.store.em();
    const bindings = await em.find(this.model.resources.roleBindings.type, { identityUid: subject } as object, { fields: ['parentUid', 'roleUid'] }) as Row[];
    const roleUids = [...new Set(bindings.map((b) => b.roleUid as string))];
    const roles = roleUids.length === 0 ? [] : await em.find(this.model.resources.roles.type, { uid: { $in: roleUids } }, { fields: ['uid', 'capabilities'] }) as Row[];
    const capsOf = new Map(roles.map((r) => [r.uid as string, new Set((r.capabilities as string[] | null) ?? [])]));
    const byGroup = new Map<string, Set<string>>();
    for (const b of bindings) {
      const g = b.parentUid as string;
      const set = byGroup.get(g) ?? byGroup.set(g, new Set()).get(g)!;
      for (const c of capsOf.get(b.roleUid as string) ?? []) set.add(c);
    }
    return {
      groupsHolding: (capabilities) => [...byGroup.entries()].filter(([, caps]) => capabilities.every((c) => caps.has(c))).map(([g]) => g),
    };
  }

  private subject(principal: Principal): string {
    if (!principal.subject) throw unauthenticated(principal.refused ?? 'a bearer token is required (Authorization: Bearer <token>)');
    return principal.subject;
  }

  /**
   * Throws unless the principal holds every capability at scope (a uid: bindings at it or above it count),
   * or, without a scope, at some group. Checked before anything is looked up, so a caller without the
   * capability learns nothing about whether the resource exists.
   */
  async requireCapability(principal: Principal, capability: Capability, scope: string | undefined): Promise<void> {
    if (capability === 'none') return;
    const subject = this.subject(principal);
    if (capability === 'authenticated') return;
    const groups = (await this.grants(subject)).groupsHolding(capability);
    const ok = scope === undefined ? groups.length > 0 : groups.some((g) => scope === g || scope.startsWith(`${g}/`));
    if (!ok) throw permissionDenied(`${capability.join(' and ')} ${capability.length > 1 ? 'are' : 'is'} required ${scope === undefined ? 'in some group' : `at ${scope}`}`);
  }

  /** No escalation: a record that grants a role needs a caller who already holds that role's capabilities there. */
  async requireGrantable(principal: Principal, r: ResourceModel, data: Row, scope: string | undefined): Promise<void> {
    for (const [name, f] of Object.entries(r.fields)) {
      if (!f.grantsRole || typeof data[name] !== 'string') continue;
      const role = await this.store.em().findOne(this.model.resources.roles.type, { uid: data[name] }, { fields: ['capabilities'] as never[] }) as Row | null;
      const caps = (role?.capabilities as string[] | null) ?? [];
      if (caps.length > 0) await this.requireCapability(principal, caps, scope);
    }
  }

  /**
   * The conditions that limit a list to what the principal may see, or undefined when it may see nothing.
   * Records outside the group tree (library artifacts) are visible to anyone holding the capability somewhere.
   * `within`: the group the list is confined to (descendants_of or children_of), when it is.
   */
  async visibility(principal: Principal, capability: Capability, r: ResourceModel, within?: string): Promise<Where[] | undefined> {
    if (capability === 'none') return [];
    const subject = this.subject(principal);
    if (capability === 'authenticated') return [];
    const groups = (await this.grants(subject)).groupsHolding(capability);
    if (groups.length === 0) return undefined;
    if (!isGroupScoped(this.model, r)) return [];
    // A list already confined below a group where the capability is held needs no condition of ours.
    if (within && groups.some((g) => within === g || within.startsWith(`${g}/`))) return [];
    const anyOf: Where[] = groups.flatMap((g) => [{ uid: g }, { uid: descendantRange(g) }]);
    if (r.publicRootRecords) anyOf.push({ parentUid: null });
    return [{ $or: anyOf }];
  }
}
