// Subscriptions and their deliveries (runtime/events/ delivers): a sink is checked when it is given, an
// organization holds at most EVENTS_MAX_SUBSCRIPTIONS, and failed deliveries can be put back on their way, within
// the organization's quotas (runtime/events/quotas.ts).
import { and, equal } from '../../runtime/tables/condition.js';
import { invalidArgument, notFound } from '../../runtime/model/errors.js';
import { organizationOf, outstandingOf, subscriptionsOf } from '../../runtime/events/quotas.js';
import { sinkUrlProblem } from '../../runtime/events/sink-address.js';
import { now, type RecordTypes } from '../../runtime/model/records.js';
import type { HandlerContext } from '../../runtime/http/route-operations.js';

type SubscriptionRecord = RecordTypes['subscriptions'];
/**
 * The events module's handlers as generated/routes.ts declares them for any API that includes it: typed by the
 * runtime's record types, not one API's generated/, so that a new API's project typechecks with its own.
 */
interface EventsHandlers {
  redriveDeliveries(request: { uid: string }, context: HandlerContext): Promise<{ redriven: number }>;
  acceptSink(
    record: SubscriptionRecord,
    context: HandlerContext,
  ): Promise<{ record: SubscriptionRecord; reveal?: Record<string, unknown> }>;
}

export const events: EventsHandlers = {
  async acceptSink(record, context) {
    const problem = sinkUrlProblem(record.sink, context.outbound);
    if (problem) throw invalidArgument([{ field: 'sink', description: problem }]);
    // Every create runs its steps in its transaction; without one, nothing could be counted.
    if (!context.transaction) throw new Error('a subscription is made in a create transaction');
    await context.eventQuotas.checkSubscriptionRoom(context.transaction, record.parentUid!);
    return { record };
  },

  /**
   * Puts the subscription's FAILED deliveries back to PENDING: at most as many as the organization's outstanding
   * quota has room for (the rest stay FAILED, for a later redrive), and at most EVENTS_REDRIVES_PER_HOUR times.
   */
  async redriveDeliveries(request, context) {
    const organization = organizationOf(request.uid);
    const quotas = context.eventQuotas;
    const takeRedrive = quotas.redriveTaking(organization);
    return context.write(async (writes) => {
      if (!(await writes.get('subscriptions', request.uid)))
        throw notFound(context.model.resources.subscriptions.type, request.uid);
      const subscriptions = (await writes.find('subscriptions', subscriptionsOf(organization))).map((s) => s.uid);
      const room = quotas.redriveRoom(organization, await writes.count('deliveries', outstandingOf(subscriptions)));
      await takeRedrive(writes);
      const failed = await writes.find(
        'deliveries',
        and(equal('parentUid', request.uid), equal('state', 'FAILED')),
        room,
      );
      const time = now();
      for (const d of failed)
        await writes.update('deliveries', d.uid, {
          state: 'PENDING',
          attempts: 0,
          nextAttemptTime: time,
          updateTime: time,
        });
      return { redriven: failed.length };
    });
  },
};
