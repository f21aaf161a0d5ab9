// The one pipeline every call goes through, whatever the transport (v2 HTTP, v1 HTTP, next gRPC). The order of
// checks lives here alone, because it is what makes the rules true:
//   1. capability at the scope, before anything is looked up: a caller without it learns nothing, not even
//      whether the record exists (lists instead see only what they may: visibility is a condition of the query);
//   2. validation of the request, against the generated validators;
//   3. no grant may grow (Policy.noEscalation), inside the write's own transaction;
//   4. the shared operation (Resources) or a hand-written handler, then the presenter.
// Adapters translate a request into a Call and the answer back; they neither authorize nor validate.
import { ApiError, invalidArgument, type FieldViolation } from '../model/errors.js';
import { capabilityScope, isGroupScoped, type Policy, type Principal } from '../access/authorization.js';
import { visibleWhere } from '../lists/visibility.js';
import { parseListRequest, type ListRequest } from '../lists/list-request.js';
import type { ListScope } from '../lists/total-count.js';
import {
  batchItemName,
  operationOf,
  type ApiModel,
  type EndpointModel,
  type FieldModel,
  type ResourceModel,
  type StandardOperation,
} from '../model/api-model.js';
import type { Row } from '../model/records.js';
import { isUidPath, parentOf } from '../model/uid.js';
import type { Resources } from '../resources/standard-methods.js';
import { equal, oneOf, type Condition } from '../tables/condition.js';
import type { Writes } from '../resources/writes.js';
import type { EmailDomainPolicy } from '../access/email-domain.js';
import { publicOnly, type OutboundPolicy } from '../access/outbound.js';
import { EventQuotas } from '../events/quotas.js';
import { check, checkPatterns, type Validators } from './validation.js';

/** A request as every transport gives it. */
export interface Call {
  principal: Principal;
  /** path parameters, decoded: uid, parent, or an endpoint's own */
  params: Record<string, string>;
  /** the query parameters, or a request message's fields, under their v2 names */
  query: Record<string, unknown>;
  /** the request body, {} when there is none */
  body: Row;
  /** update_mask as given; "*" replaces */
  mask?: string;
  /** what the adapter could not translate into v2's terms (a value v1 does not know), reported as validation */
  untranslatable?: FieldViolation[];
  /** subresources written whole with the record, by name (v1's fields that v2 keeps in a subresource) */
  subresources?: Record<string, Row>;
}

/** What a hand-written handler may use: reads through Resources, writes through write(). */
export interface HandlerContext {
  principal: Principal;
  /** An endpoint that lists a collection: conditions confining reads of it to what the caller may see. */
  visible: Condition[];
  resources: Resources;
  model: ApiModel;
  /** whose verified emails name an organization by their domain */
  emailDomains: EmailDomainPolicy;
  /** where the server may connect to a URL a caller chose (an event sink) */
  outbound: OutboundPolicy;
  /** per-organization quotas on subscriptions, outstanding deliveries and redrives */
  eventQuotas: EventQuotas;
  /** In a create step: the create's own transaction, whose reads see it (a count against a quota is exact). */
  transaction?: Writes;
  /** Writes in one transaction; writes.recordEvent records the event the served operation declares. */
  write<T>(fn: (writes: Writes) => Promise<T>): Promise<T>;
  /** Runs another endpoint for the same caller through the whole pipeline: its checks, its event. */
  run(e: EndpointModel, body: Row, handler: EndpointHandler): Promise<unknown>;
}

/** A hand-written presenter: shapes resources (records in the API's form) for responses. */
export type Present = (resources: Row[], context: HandlerContext) => Promise<Row[]>;

/** A hand-written create step: completes the record to store; reveal adds fields to the create response only. */
export type Prepare = (record: Row, context: HandlerContext) => Promise<{ record: Row; reveal?: Row }>;

/** A hand-written custom method. */
export type EndpointHandler = (request: Record<string, unknown>, context: HandlerContext) => Promise<unknown>;

export interface ListAnswer<I = Row> {
  items: I[];
  nextPageToken: string;
  totalCount: string;
  skipped: number;
}

/** A batch create's parent and the body of each create, the shared fields filled in; refuses a malformed batch. */
function batchRequest(r: ResourceModel, body: Row): { parent: string; bodies: Row[] } {
  const { max, shared } = r.batchCreate!;
  const item = batchItemName(r);
  const { parent, requests } = body;
  if (typeof parent !== 'string' || parent === '')
    throw invalidArgument([{ field: 'parent', description: 'parent is required: the group of every record made' }]);
  if (!Array.isArray(requests) || requests.length === 0 || requests.length > max)
    throw invalidArgument([{ field: 'requests', description: `requests must hold 1 to ${max} requests` }]);
  for (const key of Object.keys(body))
    if (key !== 'parent' && key !== 'requests' && !shared.includes(key))
      throw invalidArgument([{ field: key, description: `${key} is not a field of a batch create` }]);
  const bodies = requests.map((request: unknown, i): Row => {
    const at = `requests[${i}]`;
    const req = request as Row | null;
    if (typeof req !== 'object' || req === null || Array.isArray(req) || typeof req[item] !== 'object' || !req[item])
      throw invalidArgument([{ field: `${at}.${item}`, description: `each request holds the ${item} to create` }]);
    if (req.parent !== undefined && req.parent !== '' && req.parent !== parent)
      throw invalidArgument([
        { field: `${at}.parent`, description: `must be the batch's parent ${parent}, or left out` },
      ]);
    const made = { ...(req[item] as Row) };
    for (const name of shared) {
      if (body[name] === undefined) continue;
      if (made[name] === undefined) made[name] = body[name];
      else if (made[name] !== body[name])
        throw invalidArgument([
          { field: `${at}.${item}.${name}`, description: `conflicts with the batch's ${name} ${String(body[name])}` },
        ]);
    }
    return made;
  });
  return { parent, bodies };
}

/** Runs a validation, its field paths prefixed (the place of an item in a batch). */
function withFieldPrefix(prefix: string, validate: () => void): void {
  try {
    validate();
  } catch (e) {
    const bad = e instanceof ApiError && e.codeName === 'INVALID_ARGUMENT' ? e.details.find(isBadRequest) : undefined;
    if (!bad) throw e;
    const violations = (bad.fieldViolations as FieldViolation[]).map((v) => ({ ...v, field: `${prefix}${v.field}` }));
    throw invalidArgument(violations);
  }
}

const isBadRequest = (d: { '@type': string }) => d['@type'].endsWith('google.rpc.BadRequest');

/** A condition no record meets: what a caller without the capability sees of a listed collection. */
const nothing = oneOf('uid', []);

const pagingParameters = ['page_size', 'pageSize', 'page_token', 'pageToken'];

export class Operations {
  constructor(
    private readonly model: ApiModel,
    private readonly resources: Resources,
    private readonly policy: Policy,
    private readonly validators: Validators,
    private readonly emailDomains: EmailDomainPolicy = { trustedIssuers: [], blockedDomains: [] },
    private readonly outbound: OutboundPolicy = publicOnly,
    private readonly eventQuotas = new EventQuotas(),
  ) {}

  /** The generated validator of id, then what it cannot judge of the declared fields (regular expressions). */
  private validate(
    kind: 'body' | 'query',
    id: string,
    data: unknown,
    untranslatable: FieldViolation[] = [],
    fields?: Record<string, FieldModel>,
  ): void {
    if (untranslatable.length > 0) throw invalidArgument(untranslatable);
    const v = this.validators[kind](id);
    if (!v) throw new Error(`no generated validator ${id}: run npm run generate`);
    check(v, data);
    if (fields) checkPatterns(fields, data);
  }

  private capability(r: ResourceModel, kind: StandardOperation) {
    const op = operationOf(r, kind);
    if (!op) throw new Error(`${r.collection} has no ${kind} operation`);
    return op.capability;
  }

  private scope(r: ResourceModel, uid: string | undefined): string | undefined {
    return capabilityScope(this.model, r, uid);
  }

  /**
   * The operation's capability at the record uid: at its group, or, for a root identity, where the identity is
   * (runtime/access/root-identities.ts). At once when the grants are cached and no lookup is needed.
   */
  private authorize(
    r: ResourceModel,
    kind: 'get' | 'update' | 'delete',
    principal: Principal,
    uid: string | undefined,
  ): Promise<void> | void {
    const capability = this.capability(r, kind);
    if (this.policy.isRootIdentity(r, uid))
      return this.policy.requireOnRootIdentity(principal, capability, uid, kind === 'get' ? 'read' : kind);
    return this.policy.requireCapability(principal, capability, this.scope(r, uid));
  }

  /** The context of a hand-written step; `event` is the type the served operation declares. */
  context(principal: Principal, event?: string, visible: Condition[] = []): HandlerContext {
    return {
      principal,
      visible,
      resources: this.resources,
      model: this.model,
      emailDomains: this.emailDomains,
      outbound: this.outbound,
      eventQuotas: this.eventQuotas,
      write: (fn) => this.resources.write({ type: event, actor: principal.subject }, fn),
      run: (e, body, handler) => this.endpoint(e, { principal, params: {}, query: {}, body }, handler),
    };
  }

  /** The record as the presenter shows it; the record itself, at once, when there is no presenter. */
  private present(record: Row, principal: Principal, present?: Present): Row | Promise<Row> {
    return present ? present([record], this.context(principal)).then((shown) => shown[0]) : record;
  }

  /**
   * A write's answer, presented once the write has committed. A presenting read refused for want of room
   * (UNAVAILABLE, RESOURCE_EXHAUSTED) must not be the answer: clients retry those two as "nothing happened", and
   * a retried create would make a second record. Refused, the records are answered as stored.
   */
  private async presentWritten(records: Row[], principal: Principal, present?: Present): Promise<Row[]> {
    try {
      return present ? await present(records, this.context(principal)) : records;
    } catch (e) {
      if (e instanceof ApiError && (e.codeName === 'UNAVAILABLE' || e.codeName === 'RESOURCE_EXHAUSTED'))
        return records;
      throw e;
    }
  }

  /**
   * One page, or with `whole` every match without paging (v1's lists): the records the caller may list, within
   * the parent when the route nests the list under one.
   */
  async list(r: ResourceModel, call: Call, options: { present?: Present; whole?: boolean } = {}): Promise<ListAnswer> {
    if (options.whole) {
      const paging = pagingParameters.filter((name) => call.query[name] !== undefined);
      if (paging.length > 0)
        throw invalidArgument(
          paging.map((field) => ({ field, description: `${field}: this list answers every match, it does not page` })),
        );
    }
    const page = await this.listed(r, call, (req, scope, counting) =>
      options.whole
        ? this.resources
            .listAll(r, req, scope)
            .then((items) => ({ items, nextPageToken: '', totalCount: '', skipped: req.skip }))
        : this.resources.list(r, req, scope, counting),
    );
    return {
      ...page,
      items: options.present ? await options.present(page.items, this.context(call.principal)) : page.items,
    };
  }

  /** One page as list gives it without a presenter, each answer as its JSON text: for transports that write JSON. */
  listJson(r: ResourceModel, call: Call): Promise<ListAnswer<string>> {
    return this.listed(r, call, (req, scope, counting) => this.resources.listJson(r, req, scope, counting));
  }

  /** The list's checks and the caller's visibility, then the page `read` gives of what the caller may see. */
  private async listed<I>(
    r: ResourceModel,
    call: Call,
    read: (req: ListRequest, scope: Condition[], counting: ListScope) => Promise<ListAnswer<I>>,
  ): Promise<ListAnswer<I>> {
    this.validate('query', `${r.collection}.list`, call.query);
    const req = parseListRequest(call.query, r);
    const visible = await this.policy.visibleScopes(
      call.principal,
      this.capability(r, 'list'),
      r,
      req.hierarchy.descendantsOf ?? req.hierarchy.childrenOf,
    );
    if (!visible) return { items: [], nextPageToken: '', totalCount: '0', skipped: req.skip };
    const { parent } = call.params;
    const scope = [...visibleWhere(visible), ...(parent !== undefined ? [equal('parentUid', parent)] : [])];
    return read(req, scope, { visible, parent });
  }

  async get(r: ResourceModel, call: Call, present?: Present): Promise<Row> {
    const { uid } = call.params;
    await this.authorize(r, 'get', call.principal, uid);
    return this.present(await this.resources.get(r, uid), call.principal, present);
  }

  /**
   * The record as get gives it without a presenter, as its JSON text: for transports that write JSON. At once
   * when the caller's grants are known and the store answers at once; a refusal may then be thrown.
   */
  getJson(r: ResourceModel, call: Call): string | Promise<string> {
    const { uid } = call.params;
    const allowed = this.authorize(r, 'get', call.principal, uid);
    return allowed instanceof Promise
      ? allowed.then(() => this.resources.getJson(r, uid))
      : this.resources.getJson(r, uid);
  }

  async create(r: ResourceModel, call: Call, options: { present?: Present; prepare?: Prepare } = {}): Promise<Row> {
    const { parent } = call.params;
    // A transport may leave the parent out (gRPC's parent = ''): only what may live at the root is made there.
    if (parent === undefined && r.parent && !r.parentOptional)
      throw invalidArgument([{ field: 'parent', description: `a ${r.type} is created under its parent` }]);
    await this.policy.requireCapability(call.principal, this.capability(r, 'create'), this.scope(r, parent));
    if (parent === undefined && isGroupScoped(this.model, r)) await this.policy.requireUnconfined(call.principal, r);
    this.validate('body', `${r.collection}.create`, call.body, call.untranslatable, r.fields);
    this.validateSubresources(r, call);
    const { prepare } = options;
    const created = await this.resources.create(r, parent, call.body, {
      actor: call.principal.subject,
      subresources: call.subresources,
      prepare: prepare && ((record, transaction) => prepare(record, { ...this.context(call.principal), transaction })),
      guard: this.policy.noEscalation(call.principal, r),
      witness: this.policy.grantWitness(call.principal, this.capability(r, 'create'), this.scope(r, parent)),
    });
    return (await this.presentWritten([created], call.principal, options.present))[0];
  }

  /**
   * Several creates under one parent (the spec's batchCreate), all or none: the create capability in the parent,
   * each body validated and checked as a create's is, one transaction. The body is { parent, requests:
   * [{ parent?, <item> }], <shared fields>? }; a field shared at the top fills each request that leaves it out,
   * and a request giving another value is INVALID_ARGUMENT.
   */
  async batchCreate(
    r: ResourceModel,
    call: Call,
    options: { present?: Present; prepare?: Prepare } = {},
  ): Promise<Row[]> {
    const { parent, bodies } = batchRequest(r, call.body);
    await this.policy.requireCapability(call.principal, this.capability(r, 'create'), this.scope(r, parent));
    bodies.forEach((body, i) =>
      withFieldPrefix(`requests[${i}].${batchItemName(r)}.`, () =>
        this.validate('body', `${r.collection}.create`, body, call.untranslatable, r.fields),
      ),
    );
    const { prepare } = options;
    const created = await this.resources.createMany(r, parent, bodies, {
      actor: call.principal.subject,
      prepare: prepare && ((record, transaction) => prepare(record, { ...this.context(call.principal), transaction })),
      guard: this.policy.noEscalation(call.principal, r),
      witness: this.policy.grantWitness(call.principal, this.capability(r, 'create'), this.scope(r, parent)),
    });
    return this.presentWritten(created, call.principal, options.present);
  }

  /**
   * Deletes records of one parent by uid (the spec's batchDelete) in one transaction, each as a delete (the
   * delete capability in the parent, its event); a uid already gone is skipped, one of another parent refused.
   * Answers the records deleted.
   */
  async batchDelete(r: ResourceModel, call: Call, present?: Present): Promise<Row[]> {
    const { parent, names } = call.body;
    if (typeof parent !== 'string' || !isUidPath(parent))
      throw invalidArgument([{ field: 'parent', description: "parent is required: the uid of the records' parent" }]);
    const max = r.batchDelete!.max;
    if (!Array.isArray(names) || names.length === 0 || names.length > max)
      throw invalidArgument([{ field: 'names', description: `names must hold 1 to ${max} uids` }]);
    for (const key of Object.keys(call.body))
      if (key !== 'parent' && key !== 'names')
        throw invalidArgument([{ field: key, description: `${key} is not a field of a batch delete` }]);
    names.forEach((name: unknown, i) => {
      if (typeof name !== 'string' || !isUidPath(name) || parentOf(name) !== parent)
        throw invalidArgument([
          { field: `names[${i}]`, description: `"${String(name)}" is not a uid under ${parent}` },
        ]);
    });
    await this.policy.requireCapability(call.principal, this.capability(r, 'delete'), this.scope(r, parent));
    const deleted = await this.resources.deleteMany(r, names as string[], call.principal.subject);
    return this.presentWritten(deleted, call.principal, present);
  }

  async update(r: ResourceModel, call: Call, present?: Present): Promise<Row> {
    const { uid } = call.params;
    await this.authorize(r, 'update', call.principal, uid);
    this.validate('body', `${r.collection}.update`, call.body, call.untranslatable, r.fields);
    this.validateSubresources(r, call);
    const updated = await this.resources.update(r, uid, call.body, call.mask, {
      actor: call.principal.subject,
      subresources: call.subresources,
      guard: this.policy.noEscalation(call.principal, r),
      witness: this.writeWitness(r, 'update', call.principal, uid),
    });
    return (await this.presentWritten([updated], call.principal, present))[0];
  }

  async delete(r: ResourceModel, call: Call): Promise<void> {
    const { uid } = call.params;
    await this.authorize(r, 'delete', call.principal, uid);
    await this.resources.delete(r, uid, call.principal.subject, this.writeWitness(r, 'delete', call.principal, uid));
  }

  /** An update's or delete's grantWitness; none for a root identity, whose use authorize checks on its own terms. */
  private writeWitness(r: ResourceModel, kind: 'update' | 'delete', principal: Principal, uid: string) {
    if (this.policy.isRootIdentity(r, uid)) return undefined;
    return this.policy.grantWitness(principal, this.capability(r, kind), this.scope(r, uid));
  }

  /** Subresources written with their record are validated as their own update validates them. */
  private validateSubresources(r: ResourceModel, call: Call): void {
    for (const [name, body] of Object.entries(call.subresources ?? {})) {
      const s = r.subresources.find((x) => x.name === name)!;
      this.validate('body', `${r.collection}.${name}.update`, body, [], s.fields);
    }
  }

  async getSubresource(r: ResourceModel, name: string, call: Call): Promise<Row> {
    const s = r.subresources.find((x) => x.name === name)!;
    await this.policy.requireCapability(call.principal, s.get.capability, this.scope(r, call.params.uid));
    return this.resources.getSubresource(r, name, call.params.uid);
  }

  async updateSubresource(r: ResourceModel, name: string, call: Call): Promise<Row> {
    const s = r.subresources.find((x) => x.name === name)!;
    await this.policy.requireCapability(call.principal, s.update!.capability, this.scope(r, call.params.uid));
    this.validate('body', `${r.collection}.${name}.update`, call.body, [], s.fields);
    return this.resources.updateSubresource(r, name, call.params.uid, call.body, call.mask, call.principal.subject);
  }

  /**
   * A custom method: its capability at the declared scope parameter (or, for one that lists a collection, what
   * the caller may see of it), its query and body validated, its handler.
   */
  async endpoint(e: EndpointModel, call: Call, handler: EndpointHandler): Promise<unknown> {
    const listed = e.lists === undefined ? undefined : this.model.resources[e.lists];
    let visible: Condition[] = [];
    if (listed) visible = (await this.policy.visibility(call.principal, e.capability, listed)) ?? [nothing];
    else await this.policy.requireCapability(call.principal, e.capability, e.scope ? call.params[e.scope] : undefined);
    this.validate('query', e.listQuery ? `${e.lists}.list` : `${e.domain}.${e.name}.query`, call.query);
    const request: Record<string, unknown> = { ...call.query, ...call.params };
    if (e.body) {
      this.validate('body', `${e.domain}.${e.name}.body`, call.body, [], e.body);
      request.body = call.body;
    }
    // A call the spec declares but this server does not serve: refused once checked as any call is.
    if (e.unimplemented)
      throw new ApiError('UNIMPLEMENTED', `Unimplemented: ${e.name} is not served by this server: ${e.unimplemented}`);
    return handler(request, this.context(call.principal, e.event, visible));
  }
}
