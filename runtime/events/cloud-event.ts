// One delivery as a CloudEvents 1.0 request in binary content mode: the attributes as Ce-* headers, the data as
// the JSON body {actor, body}, the body in proto field names (snake_case), as the reference delivers them. The
// `cloudevents` package is not used: binary mode is these eight headers, and the package would bring its own
// validator and HTTP layer for what the token and the SSRF-checked connection need done here anyway.
import { createHash } from 'node:crypto';
import { snakeCase } from '../model/field-names.js';
import type { OutboxEvent } from '../storage/outbox.js';

/** What of an outbox event a delivery sends. */
export type StoredEvent = Pick<OutboxEvent, 'type' | 'subject' | 'groupUid' | 'actor' | 'time' | 'body'>;

/** A JSON value with every object key in its proto (snake_case) spelling. */
export function protoNamed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(protoNamed);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [snakeCase(k), protoNamed(v)]));
}

/** The request's body: the raw bytes the token's digest is taken of. */
export function eventData(e: StoredEvent): Buffer {
  return Buffer.from(JSON.stringify({ actor: e.actor ? { subject: e.actor } : {}, body: protoNamed(e.body) }));
}

export const digestOf = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** The Ce-* headers of the event; id is the delivery's, the same on every attempt. */
export function eventHeaders(e: StoredEvent, id: string, source: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': id,
    'ce-type': e.type,
    'ce-source': source,
    'ce-subject': e.subject,
    'ce-time': e.time,
    ...(e.groupUid ? { 'ce-group': e.groupUid } : {}),
    'ce-audience': 'customer',
  };
}
