// Delivers every committed event to every subscription at or above its group, at least once. Three steps, each
// its own transaction, so a crash (kill -9) at any moment loses nothing:
// 1. dispatch: events not yet dispatched, in outbox order, become one delivery per subscription made before them,
//    and are marked dispatched in the same transaction. A change's own transaction wrote only its outbox row; the
//    fan-out happens here, in short transactions of at most EVENTS_DISPATCH_BATCH deliveries (or one event's, at
//    most EVENTS_MAX_SUBSCRIPTIONS), so no write holds the database (or, on SQLite, the event loop) for long.
//    A delivery whose organization has EVENTS_MAX_OUTSTANDING pending already is made FAILED, saying why
//    (runtime/events/quotas.ts): that organization's backlog stops growing, and other organizations' go on;
// 2. claim: due deliveries are leased (leaseUntil), the oldest first, at most one in flight per subscription and
//    subject, and none while an earlier one for the same subject is still pending: a later change of a resource
//    never overtakes an earlier one at a sink. A lease that runs out (a crashed worker) frees the delivery again.
// 3. send and record: the POST, then DELIVERED, PENDING again with a backoff, or FAILED (runtime/events/retry.ts).
// Every delivery keeps its Ce-Id, so a receiver can drop the duplicates at-least-once allows. Several processes on
// one database share the work through row locks: one dispatches at a time (it holds the oldest event not yet
// dispatched), and a claim takes deliveries FOR UPDATE SKIP LOCKED, then leases them (a claim is one write
// transaction); none needs SERIALIZABLE or loses a race.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { randomUUID } from 'node:crypto';
import { and, equal, isNull, oneOf, or, range, type Condition } from '../tables/condition.js';
import type { Sql } from '../storage/sql.js';
import type { TokenIssuer } from '../access/issuer.js';
import type { OutboxEvent } from '../storage/outbox.js';
import type { RecordTypes } from '../model/records.js';
import type { Resources } from '../resources/standard-methods.js';
import type { Selection, Table } from '../tables/table.js';
import type { RowLock } from '../storage/dialect.js';
import { ancestorsOf } from '../model/uid.js';
import { eventData, eventHeaders } from './cloud-event.js';
import { nextAttemptAt, outcomeOfStatus, type Outcome, type RetryPolicy } from './retry.js';
import { checkedLookup, RefusedAddress, urlProblem, type OutboundPolicy } from '../access/outbound.js';
import { organizationOf, outstandingOf, subscriptionsOf, type EventQuotas } from './quotas.js';
import { webhookToken } from './webhook-token.js';

type Delivery = RecordTypes['deliveries'];
type Subscription = RecordTypes['subscriptions'];
type Claimed = { delivery: Delivery; subscription: Subscription; origin: string };

export interface DeliveryConfig {
  retry: RetryPolicy;
  /** a POST that has not answered by then is a failed attempt */
  timeoutMs: number;
  /** delivered and failed deliveries, and dispatched events, are deleted this long after */
  retentionMs: number;
  /** deliveries in flight at once, in all and to one sink (its origin) */
  concurrency: number;
  perSink: number;
  /** how often the worker looks for work when it has none */
  pollMs: number;
  /** where sinks may be (runtime/access/outbound.ts): checked at every delivery */
  outbound: OutboundPolicy;
  /** deliveries one dispatch transaction writes at most (unless one event alone has more subscriptions) */
  dispatchBatch: number;
}

export interface DeliveryCounts {
  delivered: number;
  retried: number;
  failed: number;
}

const iso = (ms: number) => new Date(ms).toISOString();
const bySeq = [{ property: 'seq', desc: false }];
/** The longest wait between failed passes: below readiness's 30 s, so an outage's worker is not called stuck. */
const maxBackoffMs = 10_000;
const byEventSeq = [{ property: 'eventSeq', desc: false }];
const byNextAttempt = [{ property: 'nextAttemptTime', desc: false }];
const byUid = [{ property: 'uid', desc: false }];
/** events one dispatch reads at most */
const batch = 200;
/** subscriptions one claim looks at at most */
const claimWindow = 256;

export class DeliveryWorker {
  private readonly deliveries: Table<Delivery>;
  private readonly subscriptions: Table<Subscription>;
  private readonly outbox: Table<OutboxEvent>;
  /** what a dispatch reads of an event */
  private readonly dispatched: Selection;
  /** deliveries being sent by this process, by uid, with their (subscription, subject) */
  private readonly inFlight = new Map<string, { key: string; origin: string; done: Promise<void> }>();
  private readonly aborts = new AbortController();
  private timer?: NodeJS.Timeout;
  /** the step under way, which stop() waits for */
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  /** when the last pass over the work ended (or the worker started): readiness sees a stuck worker */
  private passedAt = 0;
  private prunedAt = 0;
  /** passes failed in a row (0: the last succeeded) */
  private failedPasses = 0;
  /** the last subscription a claim looked at: the next claim starts after it, round the ring of all of them */
  private cursor = '';
  /** the last claim stopped before the end of the ring, with deliveries due: the next one looks on at once */
  private lookOn = false;
  /** when the outbox was last looked at, and whether more events waited than that pass took */
  private dispatchedAt = 0;
  private moreToDispatch = false;
  /** a pass is under way; a delivery finished meanwhile, so the next one goes at once */
  private passing = false;
  private finishedMeanwhile = false;
  readonly counts: DeliveryCounts = { delivered: 0, retried: 0, failed: 0 };

  constructor(
    private readonly resources: Resources,
    private readonly issuer: () => TokenIssuer,
    private readonly config: DeliveryConfig,
    private readonly quotas: EventQuotas,
    private readonly log: (line: Record<string, unknown>) => void,
  ) {
    this.deliveries = resources.tableOf('deliveries');
    this.subscriptions = resources.tableOf('subscriptions');
    this.outbox = resources.outbox();
    this.dispatched = this.outbox.selection(['seq', 'type', 'subject', 'groupUid', 'time']);
  }

  start(): void {
    this.passedAt = Date.now();
    this.schedule(0);
  }

  /** Why the worker is not doing its work (stopped, or stuck in a pass), for readiness; undefined when it is. */
  problem(): string | undefined {
    if (this.stopped || this.passedAt === 0) return 'the event delivery worker is not running';
    const sinceMs = Date.now() - this.passedAt;
    const stuckMs = Math.max(30_000, this.config.pollMs * 10);
    if (sinceMs > stuckMs)
      return `the event delivery worker has not finished a pass for ${Math.round(sinceMs / 1000)} s`;
    return undefined;
  }

  /**
   * Events in sequence order without their bodies: a dispatch has no use for them (a delivery reads its event's
   * when it sends it), and each would be read and parsed from its JSON.
   */
  private async undispatched(
    where: Condition<OutboxEvent>,
    limit: number,
    sql?: Sql,
    lock?: RowLock,
  ): Promise<Omit<OutboxEvent, 'body'>[]> {
    const rows = await this.outbox.findValues(where, bySeq, limit, 0, sql, this.dispatched, lock);
    return rows.map((values) => this.outbox.recordOf(values, this.dispatched));
  }

  /** How long the oldest event not yet dispatched has waited in the outbox (0: none waits). */
  async outboxLagMs(): Promise<number> {
    const [oldest] = await this.undispatched(isNull('dispatchedTime'), 1);
    return oldest ? Math.max(0, Date.now() - Date.parse(oldest.time)) : 0;
  }

  /** Stops taking work; a POST still in flight is abandoned, and its lease lets it be sent again after a restart. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.aborts.abort();
    await this.ticking;
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => (this.ticking = this.tick()), ms);
  }

  /**
   * A delivery has finished, so its sink has room again: the next pass goes now rather than after pollMs (or right
   * after the pass under way). Deliveries to a sink then go as fast as it answers, not perSink per pollMs.
   */
  private wake(): void {
    if (this.stopped || this.failedPasses > 0) return;
    if (this.passing) {
      this.finishedMeanwhile = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  private async tick(): Promise<void> {
    let busy = false;
    this.passing = true;
    this.finishedMeanwhile = false;
    try {
      // The outbox is looked at every pollMs, or at once while more waited than a pass took: not at every pass
      // that sends deliveries (under a stream of writes that was a dispatch transaction every few writes, more
      // than the writes cost). No event waits longer than pollMs and a pass to be dispatched.
      if (this.moreToDispatch || Date.now() - this.dispatchedAt >= this.config.pollMs) {
        this.dispatchedAt = Date.now();
        this.moreToDispatch = await this.dispatch();
      }
      busy = (await this.sendDue()) > 0 || this.lookOn || this.moreToDispatch;
      if (Date.now() - this.prunedAt > 60_000) await this.prune();
      this.passSucceeded();
    } catch (e) {
      this.passFailed(e);
    }
    this.passedAt = Date.now();
    this.passing = false;
    this.schedule(this.failedPasses > 0 ? this.backoffMs() : busy || this.finishedMeanwhile ? 0 : this.config.pollMs);
  }

  /**
   * A pass that failed (the database is away): the next waits twice as long as the last, from pollMs up to
   * maxBackoffMs, and only the first failure and the recovery are logged, not every pass of an outage.
   */
  private passFailed(e: unknown): void {
    if (this.failedPasses++ > 0 || this.stopped) return;
    this.log({
      level: 'error',
      worker: 'events',
      error: e instanceof Error ? e.message : String(e),
      backoff: `passes retried, the wait doubling up to ${maxBackoffMs / 1000} s; logged again once one succeeds`,
    });
  }

  private passSucceeded(): void {
    if (this.failedPasses === 0) return;
    this.log({ level: 'info', worker: 'events', message: `passes succeed again, after ${this.failedPasses} failed` });
    this.failedPasses = 0;
  }

  private backoffMs(): number {
    return Math.min(maxBackoffMs, this.config.pollMs * 2 ** Math.min(this.failedPasses - 1, 20));
  }

  private failedStep(e: unknown): void {
    if (!this.stopped)
      this.log({ level: 'error', worker: 'events', error: e instanceof Error ? e.message : String(e) });
  }

  /**
   * Step 1: one delivery per subscription at or above each new event's group, for as many whole events as fit in
   * dispatchBatch deliveries (at least one event). PENDING, or FAILED past the organization's outstanding quota.
   * True when more events were waiting than this pass took: the next pass goes at once.
   */
  private async dispatch(): Promise<boolean> {
    const [oldest] = await this.undispatched(isNull('dispatchedTime'), 1);
    if (!oldest) return false;
    return this.resources.transaction(async (sql) => {
      // Instances dispatch one at a time: the one holding the oldest event not dispatched yet fans it and the rest
      // of the batch out; another finds it held (SKIP LOCKED) or dispatched by then, and looks again at its next
      // pass. So an event becomes one delivery per subscription once, and batches are written in outbox order.
      const held = and<OutboxEvent>(equal('seq', oldest.seq!), isNull('dispatchedTime'));
      if ((await this.undispatched(held, 1, sql, 'claim')).length === 0) return false;
      const events = await this.undispatched(isNull('dispatchedTime'), batch, sql);
      if (events.length === 0) return false;
      const scopes = new Set(events.flatMap((e) => (e.groupUid ? [e.groupUid, ...ancestorsOf(e.groupUid)] : [])));
      const subscriptions =
        scopes.size > 0 ? await this.subscriptions.find(oneOf('parentUid', [...scopes]), byUid, -1, 0, sql) : [];
      const now = new Date().toISOString();
      // Each organization's outstanding deliveries, counted once when first needed and kept up to date here.
      const pending = new Map<string, number>();
      const pendingIn = async (organization: string) => {
        let n = pending.get(organization);
        if (n === undefined) {
          // All of its subscriptions, not only those above this batch's events.
          const all = await this.subscriptions.find(subscriptionsOf(organization), byUid, -1, 0, sql);
          n = await this.deliveries.count(outstandingOf(all.map((s) => s.uid)), sql);
        }
        pending.set(organization, n);
        return n;
      };
      const dispatched: Omit<OutboxEvent, 'body'>[] = [];
      let made = 0;
      let refused = 0;
      for (const e of events) {
        const above = new Set(e.groupUid ? [e.groupUid, ...ancestorsOf(e.groupUid)] : []);
        // A subscription receives what happens from its making on, not what was waiting to be dispatched.
        const to = subscriptions.filter((s) => above.has(s.parentUid!) && s.createTime <= e.time);
        if (dispatched.length > 0 && made + to.length > this.config.dispatchBatch) break;
        dispatched.push(e);
        for (const s of to) {
          const organization = organizationOf(s.uid);
          const n = await pendingIn(organization);
          const notQueued = this.quotas.notQueued(organization, n);
          if (notQueued) refused++;
          else pending.set(organization, n + 1);
          await this.deliveries.insert(sql, {
            uid: `${s.uid}/${randomUUID().replace(/-/g, '').slice(0, 16)}`,
            parentUid: s.uid,
            createTime: now,
            updateTime: now,
            eventId: randomUUID(),
            eventType: e.type,
            subject: e.subject,
            eventTime: e.time,
            eventSeq: String(e.seq),
            attempts: 0,
            ...(notQueued
              ? { state: 'FAILED', lastError: notQueued, nextAttemptTime: null }
              : { state: 'PENDING', nextAttemptTime: now }),
          });
          made++;
        }
      }
      await this.outbox.updateWhere(
        sql,
        oneOf(
          'seq',
          dispatched.map((e) => e.seq!),
        ),
        { dispatchedTime: now },
      );
      // The lag: how long the oldest of these waited in the outbox.
      const lagMs = Date.parse(now) - Date.parse(dispatched[0].time);
      this.log({
        level: refused > 0 ? 'warn' : 'info',
        worker: 'events',
        dispatched: dispatched.length,
        deliveries: made,
        ...(refused > 0 ? { notQueued: refused } : {}),
        lagMs,
      });
      return dispatched.length < events.length || events.length === batch;
    });
  }

  private get inFlightKeys(): Set<string> {
    return new Set([...this.inFlight.values()].map((f) => f.key));
  }

  /**
   * Step 2: leases the deliveries that may go now. Subscription by subscription, each claim starting after the
   * last one the claim before looked at, so a sink with a backlog cannot keep the others waiting; within one, the
   * oldest first, as many as its sink has room for, and a subject only when no earlier delivery of it is pending.
   * A claim looks at claimWindow subscriptions at most: its transaction is as short with a million of them.
   */
  private async claim(room: number, perOrigin: Map<string, number>): Promise<Claimed[]> {
    const nowMs = Date.now();
    const now = iso(nowMs);
    const due = and<Delivery>(
      equal('state', 'PENDING'),
      range('nextAttemptTime', { lte: now }),
      or(isNull('leaseUntil'), range('leaseUntil', { lt: now })),
    );
    // Nothing due (the usual case): no write transaction at all.
    if ((await this.deliveries.find(due, byNextAttempt, 1)).length === 0) return [];
    return this.resources.transaction(async (sql) => {
      const after = await this.subscriptions.find(range('uid', { gt: this.cursor }), byUid, claimWindow, 0, sql);
      // At the end of the ring, on from its start.
      const ring =
        after.length < claimWindow && this.cursor !== ''
          ? [
              ...after,
              ...(await this.subscriptions.find(
                range('uid', { lte: this.cursor }),
                byUid,
                claimWindow - after.length,
                0,
                sql,
              )),
            ]
          : after;
      this.lookOn = after.length === claimWindow;
      const keys = this.inFlightKeys;
      const taken: Claimed[] = [];
      for (const subscription of ring) {
        this.cursor = subscription.uid;
        const origin = originOf(subscription.sink);
        const free = Math.min(room - taken.length, this.config.perSink - (perOrigin.get(origin) ?? 0));
        if (free <= 0) continue;
        // The longest-waiting first; a subject's own order is kept by waitsForEarlier.
        const ofSubscription = and<Delivery>(equal('parentUid', subscription.uid), due);
        if ((await this.deliveries.find(ofSubscription, byNextAttempt, 1, 0, sql)).length === 0) continue;
        // The subscription locked before its deliveries: a delete of it (which locks it, then deletes them in its
        // own order) waits for this claim or goes first, and never deadlocks with it.
        if (!(await this.subscriptions.get(subscription.uid, sql, 'keyShare'))) continue;
        // Taken FOR UPDATE SKIP LOCKED: deliveries another instance's claim holds are passed by, and once it
        // commits their lease makes them not due; each delivery has one sender across instances.
        const candidates = await this.deliveries.find(ofSubscription, byNextAttempt, free * 4, 0, sql, 'claim');
        for (const d of candidates) {
          const key = `${d.parentUid} ${d.subject}`;
          if ((perOrigin.get(origin) ?? 0) >= this.config.perSink || keys.has(key)) continue;
          // The earliest pending of a subject may come later in this order (a retry waits longer): look at it too.
          if (await this.waitsForEarlier(d, sql)) continue;
          keys.add(key);
          const leaseUntil = iso(nowMs + this.config.timeoutMs * 2);
          await this.deliveries.update(sql, d.uid, { leaseUntil });
          perOrigin.set(origin, (perOrigin.get(origin) ?? 0) + 1);
          taken.push({ delivery: { ...d, leaseUntil }, subscription, origin });
        }
        if (taken.length >= room) break;
      }
      return taken;
    });
  }

  /** Whether an earlier delivery of the same subject to the same subscription is still pending. */
  private async waitsForEarlier(d: Delivery, sql: Sql): Promise<boolean> {
    const earlier = await this.deliveries.find(
      and(
        equal('parentUid', d.parentUid!),
        equal('subject', d.subject!),
        equal('state', 'PENDING'),
        range('eventSeq', { lt: d.eventSeq! }),
      ),
      byEventSeq,
      1,
      0,
      sql,
    );
    return earlier.length > 0;
  }

  /** Steps 2 and 3 for as many deliveries as the limits allow; resolves to how many it started. */
  private async sendDue(): Promise<number> {
    this.lookOn = false;
    const room = this.config.concurrency - this.inFlight.size;
    if (room <= 0) return 0;
    const perOrigin = new Map<string, number>();
    for (const f of this.inFlight.values()) perOrigin.set(f.origin, (perOrigin.get(f.origin) ?? 0) + 1);
    const claimed = this.stopped ? [] : await this.claim(room, perOrigin);
    for (const { delivery: d, subscription, origin } of claimed) {
      // A failed step is logged, and its lease lets the delivery go again later.
      const done = this.send(d, subscription)
        .catch((e: unknown) => this.failedStep(e))
        .finally(() => {
          this.inFlight.delete(d.uid);
          this.wake();
        });
      this.inFlight.set(d.uid, { key: `${d.parentUid} ${d.subject}`, origin, done });
    }
    return claimed.length;
  }

  /** Step 3: one attempt, and what it means recorded. */
  private async send(d: Delivery, subscription: Subscription): Promise<void> {
    const [event] = await this.outbox.find(equal('seq', Number(d.eventSeq)), bySeq, 1);
    let outcome: Outcome;
    if (!event) outcome = { kind: 'failed', error: 'the event is gone' };
    else {
      const data = eventData(event);
      const headers = eventHeaders(event, d.eventId!, this.issuer().issuer);
      const recipient = { uid: subscription.uid, group: subscription.parentUid! };
      const token = await webhookToken(this.issuer(), recipient, headers, data);
      outcome = await post(
        subscription.sink,
        { ...headers, authorization: `Bearer ${token}` },
        data,
        this.config,
        this.aborts.signal,
      );
    }
    if (this.stopped) return;
    await this.record(d, outcome);
  }

  private async record(d: Delivery, outcome: Outcome): Promise<void> {
    const nowMs = Date.now();
    const attempts = (d.attempts ?? 0) + 1;
    const common = { attempts, leaseUntil: null, updateTime: iso(nowMs) };
    let changes: Partial<Delivery>;
    if (outcome.kind === 'delivered') {
      changes = { ...common, state: 'DELIVERED', deliveredTime: iso(nowMs), nextAttemptTime: null };
      this.counts.delivered++;
    } else {
      const at =
        outcome.kind === 'retry'
          ? nextAttemptAt(this.config.retry, attempts, Date.parse(d.createTime), nowMs, outcome.retryAfterMs)
          : undefined;
      if (at === undefined) {
        const gaveUp = outcome.kind === 'retry' ? ` (given up after ${attempts} attempts)` : '';
        changes = { ...common, state: 'FAILED', lastError: outcome.error + gaveUp, nextAttemptTime: null };
        this.counts.failed++;
      } else {
        changes = { ...common, lastError: outcome.error, nextAttemptTime: iso(at) };
        this.counts.retried++;
      }
    }
    await this.resources.transaction((sql) => this.deliveries.update(sql, d.uid, changes));
    this.log({
      level: outcome.kind === 'delivered' ? 'info' : 'warn',
      worker: 'events',
      delivery: d.uid,
      eventId: d.eventId,
      type: d.eventType,
      state: changes.state ?? 'PENDING',
      attempts,
      ...(outcome.kind === 'delivered' ? {} : { error: outcome.error }),
      ...this.counts,
    });
  }

  /** Deletes what the retention period has passed: settled deliveries, then events no delivery still needs. */
  private async prune(): Promise<void> {
    this.prunedAt = Date.now();
    const cutoff = iso(Date.now() - this.config.retentionMs);
    for (;;) {
      const settled = await this.deliveries.find(
        and(oneOf('state', ['DELIVERED', 'FAILED']), range('updateTime', { lt: cutoff })),
        [{ property: 'updateTime', desc: false }],
        500,
      );
      if (settled.length === 0) break;
      await this.resources.transaction(async (sql) => {
        for (const d of settled) await this.deliveries.delete(sql, d.uid);
      });
    }
    const [oldestPending] = await this.deliveries.find(equal('state', 'PENDING'), byEventSeq, 1);
    const gone: Condition<OutboxEvent>[] = [range('dispatchedTime', { lt: cutoff })];
    if (oldestPending) gone.push(range('seq', { lt: Number(oldestPending.eventSeq) }));
    await this.resources.transaction((sql) => this.outbox.deleteWhere(sql, and(...gone)));
  }
}

function originOf(sink: string): string {
  try {
    return new URL(sink).origin;
  } catch {
    return sink;
  }
}

/** One POST to the sink, on a connection to an address the rules allow; never follows a redirect. */
function post(
  sink: string,
  headers: Record<string, string>,
  data: Buffer,
  config: DeliveryConfig,
  signal: AbortSignal,
): Promise<Outcome> {
  const url = new URL(sink);
  // Checked again at each delivery: the policy may have changed since the subscription was made. An address in
  // the URL is never looked up: it is checked as it is.
  const refused = urlProblem(url, config.outbound);
  if (refused) return Promise.resolve({ kind: 'failed', error: `sink refused: ${refused}` });
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(data.length), 'user-agent': 'platform-api events' },
      lookup: checkedLookup(config.outbound),
      timeout: config.timeoutMs,
      signal,
    });
    req.on('response', (res: IncomingMessage) => {
      res.resume();
      const retryAfter = res.headers['retry-after'];
      resolve(outcomeOfStatus(res.statusCode ?? 0, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, Date.now()));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${config.timeoutMs} ms`)));
    req.on('error', (e: Error) =>
      resolve(
        e instanceof RefusedAddress
          ? { kind: 'failed', error: `sink refused: ${e.message}` }
          : { kind: 'retry', error: e.message || (e as NodeJS.ErrnoException).code || 'connection failed' },
      ),
    );
    req.end(data);
  });
}
