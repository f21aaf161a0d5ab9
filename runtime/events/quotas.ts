// Per-organization quotas on events, so that one tenant's subscriptions cannot multiply one change into millions
// of deliveries (issue 33). They are counted over an organization (a root group and every folder below it), not
// one folder: an event reaches every subscription at or above its group, so subscriptions spread over nested
// folders would multiply just the same. Past a quota: RESOURCE_EXHAUSTED (429) with a QuotaFailure naming the
// setting (AIP-193's answer for a quota), or, for deliveries the worker makes, a FAILED delivery saying so.
import { and, equal, oneOf, range, type Condition } from '../tables/condition.js';
import { ApiError } from '../model/errors.js';
import type { RecordTypes } from '../model/records.js';
import { descendantRange } from '../model/uid.js';
import type { Writes } from '../resources/writes.js';
import type { ServerState } from '../storage/server-state.js';

type Subscription = RecordTypes['subscriptions'];
type Delivery = RecordTypes['deliveries'];

export interface EventLimits {
  /** EVENTS_MAX_SUBSCRIPTIONS: subscriptions in one organization */
  subscriptions: number;
  /** EVENTS_MAX_OUTSTANDING: PENDING deliveries of one organization's subscriptions */
  outstanding: number;
  /** EVENTS_REDRIVES_PER_HOUR: redrive calls for one organization's subscriptions, per hour (every instance's) */
  redrivesPerHour: number;
}

export const defaultEventLimits: EventLimits = { subscriptions: 100, outstanding: 10_000, redrivesPerHour: 10 };

/** The organization (root group) a uid lives in. */
export const organizationOf = (uid: string) => uid.split('/')[0];

/** The subscriptions of an organization: a range of uids (at most EVENTS_MAX_SUBSCRIPTIONS rows). */
export const subscriptionsOf = (organization: string): Condition<Subscription> =>
  range('uid', descendantRange(organization));

/** The PENDING deliveries of these subscriptions: an index read of each one's pending rows, nothing else. */
export const outstandingOf = (subscriptions: string[]): Condition<Delivery> =>
  and(oneOf('parentUid', subscriptions), equal('state', 'PENDING'));

const hourMs = 3_600_000;
/** Organizations whose redrives are remembered at once; past it the oldest are forgotten (memory stays bounded). */
const maxRemembered = 10_000;

const plural = (n: number, one: string, more = `${one}s`) => `${n} ${n === 1 ? one : more}`;

function exhausted(organization: string, what: string, setting: string, retrySeconds?: number): ApiError {
  const description = `${what}, the most ${setting} allows`;
  return new ApiError('RESOURCE_EXHAUSTED', `Resource exhausted: organization ${organization} has ${description}`, [
    ...(retrySeconds ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retrySeconds}s` }] : []),
    {
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [{ subject: `organization:${organization}`, description }],
    },
  ]);
}

export class EventQuotas {
  /** when each organization's redrives of the last hour were made, oldest first (SQLite: one process) */
  private readonly redrives = new Map<string, number[]>();

  /**
   * shared: on PostgreSQL, the rows every instance shares (runtime/storage/server-state.ts), where redrives are
   * counted, so N instances behind a balancer allow an organization what one does.
   */
  constructor(
    readonly limits: EventLimits = defaultEventLimits,
    private readonly shared?: ServerState,
  ) {}

  /**
   * Refuses a new subscription in group when its organization has as many as allowed (in the create's
   * transaction). The organization's row locked first (FOR NO KEY UPDATE): two creates in one organization take
   * turns, the second counting the first's, so neither passes the quota together; other writes under it go on.
   */
  async checkSubscriptionRoom(transaction: Writes, group: string): Promise<void> {
    const organization = organizationOf(group);
    await transaction.get('groups', organization, 'turn');
    const n = await transaction.count('subscriptions', subscriptionsOf(organization));
    if (n >= this.limits.subscriptions)
      throw exhausted(organization, plural(n, 'subscription'), `EVENTS_MAX_SUBSCRIPTIONS=${this.limits.subscriptions}`);
  }

  /** Why a new delivery is not queued, when `pending` are outstanding in its organization already. */
  notQueued(organization: string, pending: number): string | undefined {
    if (pending < this.limits.outstanding) return undefined;
    return (
      `not queued: organization ${organization} has ${pending} deliveries outstanding, ` +
      `the most EVENTS_MAX_OUTSTANDING=${this.limits.outstanding} allows; redrive once they are delivered`
    );
  }

  /** How many failed deliveries a redrive may put back with `pending` outstanding; refused when none. */
  redriveRoom(organization: string, pending: number): number {
    const room = this.limits.outstanding - pending;
    if (room <= 0)
      throw exhausted(
        organization,
        `${plural(pending, 'delivery', 'deliveries')} outstanding`,
        `EVENTS_MAX_OUTSTANDING=${this.limits.outstanding}`,
      );
    return room;
  }

  /**
   * One redrive call's taking of the organization's EVENTS_REDRIVES_PER_HOUR, run in its write (which may run more
   * than once): in the database on PostgreSQL, a row per organization locked until the write commits (instances'
   * redrives of one organization take turns; a run rolled back takes nothing); in this process's memory on SQLite,
   * once per call.
   */
  redriveTaking(organization: string, nowMs = Date.now()): (writes: Writes) => Promise<void> {
    const { shared } = this;
    if (shared) {
      const name = `events.redrives.${organization}`;
      return async (writes) => {
        await shared.insert(writes.statements, name, '[]');
        const take = (stored: string) => JSON.stringify(this.counted(organization, JSON.parse(stored), nowMs));
        await shared.change(name, take, writes.statements);
      };
    }
    let taken = false;
    return async () => {
      if (taken) return;
      const counted = this.counted(organization, this.redrives.get(organization) ?? [], nowMs);
      taken = true;
      this.redrives.delete(organization);
      this.redrives.set(organization, counted);
      if (this.redrives.size > maxRemembered) this.redrives.delete(this.redrives.keys().next().value!);
    };
  }

  /** The redrives of the last hour with one more now, or the refusal past EVENTS_REDRIVES_PER_HOUR. */
  private counted(organization: string, times: number[], nowMs: number): number[] {
    const recent = times.filter((at) => at > nowMs - hourMs);
    if (recent.length >= this.limits.redrivesPerHour) {
      const retry = Math.max(1, Math.ceil((recent[0] + hourMs - nowMs) / 1000));
      throw exhausted(
        organization,
        `made ${plural(recent.length, 'redrive')} in the last hour`,
        `EVENTS_REDRIVES_PER_HOUR=${this.limits.redrivesPerHour}`,
        retry,
      );
    }
    return [...recent, nowMs];
  }
}
