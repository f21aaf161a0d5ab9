// v1's advisory events: in v2 the events are a list inside the advisory; v1 also names each one and lets it be
// created and updated on its own.
//   GET  /vulnerabilities/v1/advisories/{advisory}/events  -> {items: [...], parentId}
//   POST /vulnerabilities/v1/advisories/{advisory}/events  {advisoryEvent: {...}}  -> the event, with its id
//   PUT  /vulnerabilities/v1/advisory_events/{id}          {...event fields}        -> the event
// An event's id is its advisory's uid and its position (16 hex digits): events are only ever appended, so the
// position is stable, and the id is a child uid of the advisory as the reference's are.
import type { HttpContext } from '../runtime/http/context.js';
import type { Router } from '../runtime/http/router.js';
import { capabilityScope, type Principal } from '../runtime/access/authorization.js';
import { invalidArgument, notFound } from '../runtime/model/errors.js';
import { operationOf, type ResourceModel } from '../runtime/model/api-model.js';
import { now, type Row } from '../runtime/model/records.js';
import { requestBody as body, pathParams } from '../runtime/http/route-operations.js';
import { parentOf } from '../runtime/model/uid.js';
import { check, checkParameterNames } from '../runtime/pipeline/validation.js';
import type { V1Deps, V1Extension, V1Presenter } from '../runtime/http/v1/adapter.js';

const eventId = (advisory: string, index: number) => `${advisory}/${index.toString(16).padStart(16, '0')}`;

function eventIndex(id: string): number {
  return parseInt(id.slice(id.lastIndexOf('/') + 1), 16);
}

const events = (advisory: Row): Row[] => (advisory.events ?? []) as Row[];

/** Advisories in v1 carry their events with ids; a body's event ids are dropped (the position is the id). */
const advisoryEventIds: V1Presenter = {
  out: (advisory) => ({
    ...advisory,
    ...(advisory.events
      ? { events: events(advisory).map((e, i) => ({ id: eventId(advisory.uid as string, i), ...e })) }
      : {}),
  }),
  in: (advisory) =>
    Array.isArray(advisory.events) ? { ...advisory, events: advisory.events.map((e: Row) => dropId(e)) } : advisory,
};

function dropId(event: unknown): unknown {
  if (event === null || typeof event !== 'object' || Array.isArray(event)) return event;
  const { id: _id, ...rest } = event as Row;
  return rest;
}

/** `shape` renames an advisory between v1 and v2, events included. */
function addAdvisoryEventRoutes(
  router: Router,
  advisories: ResourceModel,
  shape: V1Presenter,
  { model, resources, policy, validators }: V1Deps,
): void {
  const list = operationOf(advisories, 'list')!;
  const update = operationOf(advisories, 'update');
  const principal = (ctx: HttpContext) => ctx.state.principal as Principal;
  const scope = (uid: string) => capabilityScope(model, advisories, uid);
  /** One event in v1's shape: the advisory's v1 rendering, narrowed to the event. */
  const v1Event = (advisory: Row, index: number) => (shape.out(advisory).events as Row[])[index];
  /** A v1 event body in v2's shape, checked as the advisory's update would check it. */
  const v2Event = (given: unknown, field: string): Row => {
    if (given === null || typeof given !== 'object' || Array.isArray(given))
      throw invalidArgument([{ field, description: `${field} must be an object` }]);
    const event = (shape.in({ events: [given] }).events as Row[])[0];
    check(validators.body(`${advisories.collection}.update`)!, { events: [event] });
    return event;
  };

  router.get('/vulnerabilities/v1/advisories/{uid*}/events', async (ctx) => {
    checkParameterNames(ctx.query);
    const { uid: parentId } = pathParams(ctx, ['uid']);
    await policy.requireCapability(principal(ctx), list.capability, scope(parentId));
    const advisory = await resources.get(advisories, parentId);
    ctx.body = { items: shape.out(advisory).events ?? [], parentId };
  });

  if (!update) return;
  router.post('/vulnerabilities/v1/advisories/{uid*}/events', async (ctx) => {
    const { uid: parentId } = pathParams(ctx, ['uid']);
    await policy.requireCapability(principal(ctx), update.capability, scope(parentId));
    const event = v2Event(body(ctx).advisoryEvent, 'advisoryEvent');
    event.createTime ??= now();
    let index = -1;
    const updated = await resources.update(
      advisories,
      parentId,
      (current) => {
        index = events(current).length;
        return { events: [...events(current), event] };
      },
      'events',
      { actor: principal(ctx).subject },
    );
    ctx.body = v1Event(updated, index);
  });

  router.put('/vulnerabilities/v1/advisory_events/{id*}', async (ctx) => {
    const { id } = pathParams(ctx, ['id']);
    const advisory = parentOf(id);
    if (!advisory)
      throw invalidArgument([
        { field: 'id', description: 'an advisory event id is its advisory uid, a slash, and 16 hex digits' },
      ]);
    await policy.requireCapability(principal(ctx), update.capability, scope(advisory));
    const event = v2Event(body(ctx), '(body)');
    const index = eventIndex(id);
    const updated = await resources.update(
      advisories,
      advisory,
      (current) => {
        if (index >= events(current).length) throw notFound('AdvisoryEvent', id);
        // A replaced event keeps its time unless the body gives one.
        return {
          events: events(current).map((e, i) =>
            i === index ? { ...event, createTime: event.createTime ?? e.createTime } : e,
          ),
        };
      },
      'events',
      { actor: principal(ctx).subject },
    );
    ctx.body = v1Event(updated, index);
  });
}

export const advisoryEvents: V1Extension = { presenter: advisoryEventIds, routes: addAdvisoryEventRoutes };
