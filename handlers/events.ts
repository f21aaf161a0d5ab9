// Subscriptions and their deliveries (runtime/events/ delivers): a sink is checked when it is given, and failed
// deliveries can be put back on their way.
import type { EventsHandlers } from '../generated/routes.js';
import { and, equal } from '../runtime/condition.js';
import { invalidArgument, notFound } from '../runtime/errors.js';
import { sinkUrlProblem } from '../runtime/events/sink-address.js';
import { now } from '../runtime/records.js';

export const events: EventsHandlers = {
  async acceptSink(record, context) {
    const problem = sinkUrlProblem(record.sink, context.outbound);
    if (problem) throw invalidArgument([{ field: 'sink', description: problem }]);
    return { record };
  },

  async redriveDeliveries(request, context) {
    return context.write(async (writes) => {
      if (!(await writes.get('subscriptions', request.uid)))
        throw notFound(context.model.resources.subscriptions.type, request.uid);
      const failed = await writes.find('deliveries', and(equal('parentUid', request.uid), equal('state', 'FAILED')));
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
