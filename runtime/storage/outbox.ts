// The event outbox: every change records its event in the same transaction as the change, so an event is
// stored if and only if the change is. The delivery worker (runtime/events/) hands each event, in sequence order,
// to a delivery per subscription, and marks it dispatched in the same transaction.
import { EntitySchema } from '@mikro-orm/core';
import type { ApiModel, ResourceModel } from '../model/api-model.js';
import { now, type Row } from '../model/records.js';

export interface OutboxEvent {
  seq?: number;
  type: string;
  /** the uid of the changed resource */
  subject: string;
  /** the group the resource lives in, if any */
  groupUid: string | null;
  /** the identity that made the change, if known */
  actor: string | null;
  time: string;
  /** the resource after a create or update; {uid} for a delete */
  body: Row;
  /** when the event was handed to its subscriptions' deliveries; null until then */
  dispatchedTime?: string | null;
}

export const outboxEntity = new EntitySchema<OutboxEvent>({
  name: 'OutboxEvent',
  tableName: 'event_outbox',
  properties: {
    seq: { type: 'integer', primary: true, autoincrement: true },
    type: { type: 'text' },
    subject: { type: 'text' },
    groupUid: { type: 'text', nullable: true, index: true },
    actor: { type: 'text', nullable: true },
    time: { type: 'text' },
    body: { type: 'json' },
    dispatchedTime: { type: 'text', nullable: true, index: true },
  },
});

/** The group a record of r with this uid belongs to: itself for groups, else the nearest group above it. */
export function groupOf(model: ApiModel, r: ResourceModel, uid: string): string | null {
  // The group's uid is uid's text before `end`; undefined once no segment is left.
  let end: number | undefined = uid.length;
  let current: ResourceModel | undefined = r;
  while (current && current.collection !== 'groups') {
    // A record whose uid is its parent's (an account association) shares its parent's segments.
    if (current.uid !== 'parent' && end !== undefined) {
      const cut: number = end === 0 ? -1 : uid.lastIndexOf('/', end - 1);
      end = cut < 0 ? undefined : cut;
    }
    current = current.parent ? model.resources[current.parent] : undefined;
  }
  return current && end !== undefined ? uid.slice(0, end) : null;
}

export type NewEvent = Omit<OutboxEvent, 'seq' | 'time' | 'dispatchedTime'>;

/** The stored row of a new event (Resources.recordEvent stores it). */
export function outboxRow(e: NewEvent): OutboxEvent {
  // Written out, not `{ ...e, time, dispatchedTime }`: a spread given new properties costs 2-3 µs on Node 20.
  const { type, subject, groupUid, actor, body } = e;
  return { type, subject, groupUid, actor, body, time: now(), dispatchedTime: null };
}
