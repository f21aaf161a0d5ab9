// What each rule checks. A rule reads the plan of its resource, creates what it needs under the suite's group
// through the public API, and fails with what it expected, what came back and the request behind it.
import { failingFields, type ConformancePlan, type ResourcePlan } from './plan.js';
import { type ApiClient, expect, expectError, expectOk, Skip, statusOf, type Exchange } from './client.js';

export class Fixture {
  private counter = 0;
  private readonly memo = new Map<string, Promise<unknown>>();
  /** uids the suite created, with their base path, for clean-up in reverse order */
  readonly created: { base: string; uid: string }[] = [];
  /** records nothing else refers to or lives under (the page size rules' many), deleted first, several at once */
  readonly leaves: { base: string; uid: string }[] = [];

  constructor(
    readonly client: ApiClient,
    readonly plan: ConformancePlan,
    readonly root: string,
  ) {}

  resource(collection: string): ResourcePlan {
    const p = this.plan.resources.find((r) => r.collection === collection);
    if (!p) throw new Skip(`the plan has no resource ${collection}`);
    return p;
  }

  once<T>(key: string, make: () => Promise<T>): Promise<T> {
    if (!this.memo.has(key)) this.memo.set(key, make());
    return this.memo.get(key) as Promise<T>;
  }

  /**
   * A create body: string values made distinct, so records differ and sort by their fields, and references
   * pointing at records the suite made for them.
   */
  async variant(p: ResourcePlan): Promise<Record<string, unknown>> {
    const n = ++this.counter;
    const body: Record<string, unknown> = structuredClone(p.createBody);
    for (const [field, collection] of Object.entries(p.references)) body[field] = await this.referenced(collection);
    for (const [k, v] of Object.entries(body)) {
      if (typeof v !== 'string' || !p.strings.includes(k) || p.references[k]) continue;
      const pattern = p.patterns[k] ? new RegExp(p.patterns[k], 'u') : undefined;
      const candidate = `${v}-${String(n).padStart(3, '0')}`;
      if (!pattern || pattern.test(candidate)) body[k] = candidate;
    }
    return body;
  }

  /** The create path under parent; one-per-parent resources get a new subgroup of it each time. */
  async createPath(p: ResourcePlan, parent: string | undefined): Promise<string> {
    if (parent === undefined) return p.base;
    if (p.uidIsParent) return `${p.base}/${(await this.create(this.resource('groups'), parent)).uid}`;
    return `${p.base}/${parent}`;
  }

  /** A record of the collection for references to point at, made once per run. */
  referenced(collection: string): Promise<string> {
    return this.once(`ref:${collection}`, async () => {
      const p = this.resource(collection);
      return (await this.create(p, await this.sharedParent(p))).uid as string;
    });
  }

  async create(p: ResourcePlan, parent: string | undefined, given?: Record<string, unknown>): Promise<any> {
    const body = given ?? (await this.variant(p));
    const x = await this.client.call('POST', await this.createPath(p, parent), body);
    const created = expectOk(x, `create ${p.type}`);
    expect(typeof created.uid === 'string' && created.uid.length > 0, 'the created resource to have a uid', created, x);
    this.created.push({ base: p.base, uid: created.uid });
    return created;
  }

  /** A new parent for records of p: a subgroup of the suite's group, or a new record of the parent resource. */
  async freshParent(p: ResourcePlan): Promise<string | undefined> {
    if (!p.parent) return undefined;
    if (p.parent === 'groups') return (await this.create(this.resource('groups'), this.root)).uid;
    const parentPlan = this.resource(p.parent);
    if (!parentPlan.operations.includes('create'))
      throw new Skip(`cannot create a ${parentPlan.type} to hold ${p.collection}`);
    return (await this.create(parentPlan, await this.sharedParent(parentPlan))).uid;
  }

  sharedParent(p: ResourcePlan): Promise<string | undefined> {
    if (p.parent === 'groups') return Promise.resolve(this.root);
    return this.once(`parent:${p.collection}`, () => this.freshParent(p));
  }

  /** The list URL of the records under a parent. */
  listUrl(p: ResourcePlan, parent: string | undefined, query: Record<string, string> = {}): string {
    const q = new URLSearchParams(query);
    let base = p.base;
    if (p.listPath && parent !== undefined) base = p.listPath.replace('{parent}', parent);
    else if (parent !== undefined) q.set(p.uidIsParent ? 'uidp.descendants_of' : 'uidp.children_of', parent);
    const s = q.toString();
    return s ? `${base}?${s}` : base;
  }

  /**
   * At least n records under a parent of their own, shared by the page size rules and grown as they ask: more
   * than the default page size (51), more than the maximum (201). A target that refuses more (a quota) skips.
   */
  async recordsUnder(p: ResourcePlan, n: number): Promise<{ parent: string | undefined; records: number }> {
    const set = await this.once(`big:${p.collection}`, async () => ({ parent: await this.freshParent(p), records: 0 }));
    const grow = async () => {
      const had = set.records;
      const grown: string[] = [];
      // Eight at a time: the target takes them as any client's concurrent writes.
      while (set.records < n) {
        const batch = Math.min(8, n - set.records);
        const made = await Promise.all(Array.from({ length: batch }, () => this.tryCreate(p, set.parent)));
        for (const x of made) if ('uid' in x) grown.push(x.uid);
        set.records = had + grown.length;
        const refused = made.find((x) => 'refused' in x);
        if (refused) {
          // What this growth took is given back, so that the quota it filled does not fail the rules after it.
          await this.giveBack(p, grown);
          set.records = had;
          const took = had + grown.length;
          throw new Skip(`the target took ${took} ${p.collection} in one scope and refused more (${refused.refused})`);
        }
      }
    };
    this.growing = this.growing.then(grow, grow);
    await this.growing;
    return set;
  }

  private growing: Promise<void> = Promise.resolve();

  /** A create that the target may refuse with a quota (RESOURCE_EXHAUSTED): the record's uid, or what it answered. */
  private async tryCreate(p: ResourcePlan, parent: string | undefined): Promise<{ uid: string } | { refused: string }> {
    const x = await this.client.call('POST', await this.createPath(p, parent), await this.variant(p));
    if (x.status === statusOf[8]) return { refused: `HTTP ${x.status} ${x.body?.message ?? ''}` };
    const created = expectOk(x, `create ${p.type}`);
    this.leaves.push({ base: p.base, uid: created.uid });
    return { uid: created.uid };
  }

  /** Deletes these leaves now, eight at a time, and forgets them. */
  private async giveBack(p: ResourcePlan, uids: string[]): Promise<void> {
    for (let i = 0; i < uids.length; i += 8)
      await Promise.all(uids.slice(i, i + 8).map((uid) => this.client.call('DELETE', `${p.base}/${uid}`)));
    const gone = new Set(uids);
    const kept = this.leaves.filter((l) => !gone.has(l.uid));
    this.leaves.splice(0, this.leaves.length, ...kept);
  }

  /** Eight records under a parent of their own, for the paging and ordering rules. */
  walkSet(p: ResourcePlan): Promise<{ parent: string | undefined; records: any[] }> {
    return this.once(`walk:${p.collection}`, async () => {
      const parent = await this.freshParent(p);
      const records = [];
      for (let i = 0; i < 8; i++) records.push(await this.create(p, parent));
      return { parent, records };
    });
  }
}

const rfc3339ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Not shown: over gRPC, proto3 cannot tell a field left out from one at its default. */
const unset = (v: unknown) => v === undefined || v === '' || v === false || v === 0;
const missingUid = (fx: Fixture) => `${fx.root}/0123456789abcdef`;

function sortKey(record: any, field: string): string {
  const v = record[field];
  return v === undefined || v === null ? '' : String(v);
}

async function walk(
  fx: Fixture,
  p: ResourcePlan,
  parent: string | undefined,
  query: Record<string, string>,
): Promise<{ items: any[]; last: Exchange }> {
  const items: any[] = [];
  let token = '';
  let last: Exchange | undefined;
  for (let page = 0; page < 100; page++) {
    const q = { ...query };
    if (token) q.page_token = token;
    last = await fx.client.call('GET', fx.listUrl(p, parent, q));
    const body = expectOk(last, `list ${p.collection}`);
    const pageItems = body[p.collection];
    expect(Array.isArray(pageItems), `the envelope key "${p.collection}" to hold an array`, body, last);
    const size = Number(query.page_size ?? 50);
    expect(pageItems.length <= size, `at most page_size=${size} items`, pageItems.length, last);
    items.push(...pageItems);
    token = body.nextPageToken ?? '';
    if (!token) return { items, last };
    expect(pageItems.length === size, `a full page of ${size} before a nextPageToken`, pageItems.length, last);
  }
  throw new Error('more than 100 pages');
}

async function checkOrderedWalk(fx: Fixture, p: ResourcePlan, key: string, desc: boolean, size: number) {
  const { parent, records } = await fx.walkSet(p);
  const field = key === 'uid' ? 'uid' : p.orderBy[key];
  if (records.every((r) => r[field] === undefined))
    throw new Skip(`the ${p.type} answers do not show ${field}, so its order cannot be checked`);
  const orderBy = desc ? `${key} desc` : key;
  const { items, last } = await walk(fx, p, parent, { page_size: String(size), order_by: orderBy });
  const uids = items.map((i) => i.uid);
  expect(
    new Set(uids).size === uids.length,
    `no duplicates walking pages of ${size} (order_by=${orderBy})`,
    uids,
    last,
  );
  const want = records.map((r) => r.uid).sort();
  expect(
    JSON.stringify([...uids].sort()) === JSON.stringify(want),
    `every record exactly once walking pages of ${size} (order_by=${orderBy})`,
    uids,
    last,
  );
  const sorted = [...items].sort((a, b) => {
    const ka = sortKey(a, field);
    const kb = sortKey(b, field);
    return ka < kb ? -1 : ka > kb ? 1 : a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
  });
  if (desc) sorted.reverse();
  expect(
    JSON.stringify(uids) === JSON.stringify(sorted.map((i) => i.uid)),
    `records ordered by ${field}${desc ? ' descending' : ''}, ties by uid, across pages`,
    items.map((i) => [i[field], i.uid]),
    last,
  );
}

/** For a list nested under its parent (artifacts/{parent}/versions), some parent the target already has. */
async function listParent(fx: Fixture, p: ResourcePlan): Promise<string | undefined> {
  if (!p.listPath) return undefined;
  const parentPlan = fx.resource(p.parent!);
  const up = expectOk(await fx.client.call('GET', `${parentPlan.base}?page_size=1`), `list ${parentPlan.collection}`)[
    parentPlan.collection
  ]?.[0];
  if (!up) throw new Skip(`the target has no ${parentPlan.collection} to list ${p.collection} under`);
  return up.uid;
}

type RuleFn = (fx: Fixture, p: ResourcePlan, arg: string) => Promise<void>;

/** Rule implementations by rule name; a trailing * takes the rest of the name as its argument. */
export const resourceRules: Record<string, RuleFn> = {
  'create/returns-resource': async (fx, p) => {
    const path = await fx.createPath(p, await fx.sharedParent(p));
    const parent = path === p.base ? undefined : path.slice(p.base.length + 1);
    const body = await fx.variant(p);
    const x = await fx.client.call('POST', path, body);
    const created = expectOk(x, `create ${p.type}`);
    fx.created.push({ base: p.base, uid: created.uid });
    if (parent !== undefined && p.uidIsParent)
      expect(created.uid === parent, `the uid of the parent ${parent}`, created.uid, x);
    else if (parent !== undefined)
      expect(
        typeof created.uid === 'string' && created.uid.startsWith(`${parent}/`),
        `a uid under the parent ${parent}`,
        created.uid,
        x,
      );
    for (const t of ['createTime', 'updateTime']) {
      if (created[t] !== undefined)
        expect(rfc3339ms.test(created[t]), `${t} in RFC 3339 UTC with milliseconds`, created[t], x);
    }
    for (const [k, v] of Object.entries(body)) {
      if (typeof v !== 'object' && !p.inputOnly.includes(k))
        expect(
          JSON.stringify(created[k]) === JSON.stringify(v),
          `${k} echoed as sent (${JSON.stringify(v)})`,
          created[k],
          x,
        );
    }
  },
  'create/ignores-output-only': async (fx, p) => {
    const body = { ...(await fx.variant(p)), uid: 'ffff', createTime: '2001-01-01T00:00:00.000Z' };
    const x = await fx.client.call('POST', await fx.createPath(p, await fx.sharedParent(p)), body);
    const created = expectOk(x, 'create with output-only fields in the body');
    fx.created.push({ base: p.base, uid: created.uid });
    expect(created.uid !== 'ffff', 'the server to assign the uid', created.uid, x);
    expect(created.createTime !== '2001-01-01T00:00:00.000Z', 'the server to set createTime', created.createTime, x);
  },
  'create/requires-*': async (fx, p, field) => {
    const body = await fx.variant(p);
    delete body[field];
    const x = await fx.client.call('POST', await fx.createPath(p, await fx.sharedParent(p)), body);
    if (x.status === 200 && x.body?.uid) fx.created.push({ base: p.base, uid: x.body.uid });
    const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
    const br = b.details.find((d: any) => d['@type'].endsWith('google.rpc.BadRequest'));
    expect(
      br.fieldViolations.some((v: any) => v.field === field || v.field.endsWith(`.${field}`)),
      `a field violation for ${field}`,
      br.fieldViolations,
      x,
    );
    expect(
      new RegExp(`^Invalid argument: (\\S+\\.)?${field}: \\S`).test(b.message),
      `the message "Invalid argument: ${field}: <description>"`,
      b.message,
      x,
    );
  },
  'create/rejects-invalid-*': async (fx, p, field) => {
    const value = p.invalid.find((v) => v.field === field)!.value;
    const x = await fx.client.call('POST', await fx.createPath(p, await fx.sharedParent(p)), {
      ...(await fx.variant(p)),
      [field]: value,
    });
    if (x.status === 200 && x.body?.uid) fx.created.push({ base: p.base, uid: x.body.uid });
    const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
    const br = b.details.find((d: any) => d['@type'].endsWith('google.rpc.BadRequest'));
    expect(
      br.fieldViolations.some((v: any) => v.field === field),
      `a field violation for ${field}`,
      br.fieldViolations,
      x,
    );
  },
  'create/pattern-excludes-*': async (fx, p, field) => {
    // One probe per class of character a pattern may leave out: upper case, punctuation, white space other than a
    // space, a letter beyond ASCII, and nothing at all. Probes the pattern accepts are not sent.
    const pattern = new RegExp(p.patterns[field], 'u');
    const valid = await fx.variant(p);
    const base = typeof valid[field] === 'string' ? (valid[field] as string) : '';
    const probes = ['A', 'Z', '!', '/', '@', '*', '\t', '\u00e9', '\u0416'].map((c) => base + c);
    probes.push('');
    let sent = 0;
    for (const value of probes.filter((v) => !pattern.test(v))) {
      const x = await fx.client.call('POST', await fx.createPath(p, await fx.sharedParent(p)), {
        ...(await fx.variant(p)),
        [field]: value,
      });
      if (x.status === 200 && x.body?.uid) fx.created.push({ base: p.base, uid: x.body.uid });
      expect(
        x.status !== 200,
        `${field} ${JSON.stringify(value)} refused (the pattern ${p.patterns[field]} excludes it)`,
        `HTTP 200 ${JSON.stringify(x.body)}`,
        x,
      );
      const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
      const br = b.details.find((d: any) => d['@type'].endsWith('google.rpc.BadRequest'));
      expect(
        br.fieldViolations.some((v: any) => v.field === field),
        `a field violation for ${field}`,
        br.fieldViolations,
        x,
      );
      sent++;
    }
    if (sent === 0) throw new Skip(`no probe breaks the pattern of ${field}`);
  },
  'create/one-violation-per-field': async (fx, p) => {
    // Every field that can fail at once: required ones left out, patterned ones given a value they exclude.
    const body = await fx.variant(p);
    const failing = failingFields(p);
    for (const f of failing) {
      const invalid = p.invalid.find((v) => v.field === f);
      if (invalid) body[f] = invalid.value;
      else delete body[f];
    }
    const x = await fx.client.call('POST', await fx.createPath(p, await fx.sharedParent(p)), body);
    if (x.status === 200 && x.body?.uid) fx.created.push({ base: p.base, uid: x.body.uid });
    const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
    const br = b.details.find((d: any) => d['@type'].endsWith('google.rpc.BadRequest'));
    const named = (f: string) =>
      (br.fieldViolations ?? []).filter((v: any) => v.field === f || v.field.endsWith(`.${f}`));
    expect(
      failing.every((f) => named(f).length === 1),
      `one field violation for each of ${failing.join(', ')}`,
      br.fieldViolations,
      x,
    );
  },
  'create/natural-key-taken-once': async (fx, p) => {
    // A record made again with the same key (a repo's name in its group), the other fields fresh.
    const parent = await fx.sharedParent(p);
    const first = await fx.create(p, parent);
    const again = await fx.variant(p);
    for (const f of p.naturalKey!) if (f !== 'parent') again[f] = first[f];
    const x = await fx.client.call('POST', await fx.createPath(p, parent), again);
    if (x.status === 200 && x.body?.uid) fx.created.push({ base: p.base, uid: x.body.uid });
    expectError(x, 6, 'ALREADY_EXISTS');
  },
  'get/returns-created': async (fx, p) => {
    const created = await fx.create(p, await fx.sharedParent(p));
    for (const f of p.createOnly) {
      expect(!unset(created[f]), `the create response to show ${f}`, created, undefined);
      delete created[f];
    }
    const x = await fx.client.call('GET', `${p.base}/${created.uid}`);
    const got = { ...expectOk(x, `get ${p.type}`) };
    for (const f of p.createOnly) {
      expect(unset(got[f]), `get not to show ${f}`, got[f], x);
      delete got[f];
    }
    expect(
      JSON.stringify(got) === JSON.stringify(created),
      `get to return what create returned${p.createOnly.length ? ` but ${p.createOnly.join(', ')}` : ''}`,
      x.body,
      x,
    );
  },
  'get/returns-listed': async (fx, p) => {
    const list = await fx.client.call('GET', `${p.base}?page_size=1`);
    const first = expectOk(list, `list ${p.collection}`)[p.collection]?.[0];
    if (!first) throw new Skip('the target has no records of this resource');
    const x = await fx.client.call('GET', `${p.base}/${first.uid}`);
    expect(
      JSON.stringify(expectOk(x, `get ${p.type}`)) === JSON.stringify(first),
      'get to return what list returned',
      x.body,
      x,
    );
  },
  'get/not-found-has-resource-info': async (fx, p) => {
    const x = await fx.client.call('GET', `${p.base}/${missingUid(fx)}`);
    expectError(x, 5, 'NOT_FOUND', 'ResourceInfo');
  },
  'list/envelope': async (fx, p) => {
    const parent = p.operations.includes('create') ? (await fx.walkSet(p)).parent : await listParent(fx, p);
    const x = await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '2' }));
    const b = expectOk(x, `list ${p.collection}`);
    expect(Array.isArray(b[p.collection]), `an array under "${p.collection}"`, b, x);
    expect(
      typeof b.totalCount === 'string' && /^\d+$/.test(b.totalCount),
      'totalCount as a string holding an integer',
      b.totalCount,
      x,
    );
    expect(typeof b.skipped === 'number', 'skipped as a number', b.skipped, x);
    expect(
      b.nextPageToken === undefined || typeof b.nextPageToken === 'string',
      'nextPageToken a string or absent',
      b.nextPageToken,
      x,
    );
    if (p.operations.includes('create'))
      expect(b.totalCount === '8', 'totalCount "8" for the 8 records made for this rule', b.totalCount, x);
    if (!p.operations.includes('create') && b[p.collection].length === 0)
      throw new Skip('the target has no records of this resource');
  },
  'list/page-size-default': async (fx, p) => {
    // The default (50) shows only with more records than it in one scope.
    const { parent, records } = await fx.recordsUnder(p, 51);
    const x = await fx.client.call('GET', fx.listUrl(p, parent));
    const b = expectOk(x, `list ${p.collection} without page_size`);
    expect(b[p.collection].length === 50, '50 items, the default page size', b[p.collection].length, x);
    expect(!!b.nextPageToken, 'a nextPageToken for the 51st', b.nextPageToken, x);
    expect(b.totalCount === String(records), `totalCount "${records}"`, b.totalCount, x);
  },
  'list/page-size-max': async (fx, p) => {
    // The maximum (200) shows only with more records than it in one scope: 201.
    const { parent, records } = await fx.recordsUnder(p, 201);
    const x = await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '200', order_by: 'uid' }));
    const first = expectOk(x, 'page_size=200 over 201 records');
    expect(first[p.collection].length === 200, '200 items, the maximum', first[p.collection].length, x);
    expect(!!first.nextPageToken, 'a nextPageToken for the 201st', first.nextPageToken, x);
    const y = await fx.client.call(
      'GET',
      fx.listUrl(p, parent, { page_size: '200', order_by: 'uid', page_token: first.nextPageToken }),
    );
    const rest = expectOk(y, 'the page after 200');
    expect(rest[p.collection].length === records - 200, `the last ${records - 200}`, rest[p.collection].length, y);
    // Above the maximum the spec does not say whether the server refuses or caps: either, never more than 200.
    for (const size of ['201', '1000']) {
      const z = await fx.client.call('GET', fx.listUrl(p, parent, { page_size: size }));
      if (z.status !== 200) expectError(z, 3, 'INVALID_ARGUMENT');
      else expect(z.body[p.collection]?.length <= 200, `at most 200 items for page_size=${size}`, z.body, z);
    }
  },
  'list/exact-last-page': async (fx, p) => {
    const { parent, records } = await fx.walkSet(p);
    const first = expectOk(await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '4' })), 'page 1 of 4');
    const x = await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '4', page_token: first.nextPageToken }));
    const second = expectOk(x, 'page 2 of 4, exactly full and the last');
    expect(second[p.collection].length === records.length - 4, `the last ${records.length - 4}`, second, x);
    if (!second.nextPageToken) return;
    // Spec 2: the token is empty or absent when no results follow. A token leading to an empty page holds only
    // under a lenient reading: the failure says which, so that a reader can weigh it.
    const y = await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '4', page_token: second.nextPageToken }));
    const leadsNowhere = y.status === 200 && y.body?.[p.collection]?.length === 0 && !y.body.nextPageToken;
    expect(
      false,
      'no nextPageToken on the page with no more results after it',
      `nextPageToken ${JSON.stringify(second.nextPageToken)}${leadsNowhere ? ' (it leads to an empty page: the lenient reading holds)' : ''}`,
      x,
    );
  },
  'list/fresh-after-writes': async (fx, p) => {
    const parent = await fx.freshParent(p);
    const listed = async (what: string) => {
      const x = await fx.client.call('GET', fx.listUrl(p, parent, { order_by: 'uid' }));
      const b = expectOk(x, what);
      return { x, total: b.totalCount, uids: b[p.collection].map((i: any) => i.uid) };
    };
    const before = await listed('list before the writes');
    const a = await fx.create(p, parent);
    const b = await fx.create(p, parent);
    const grown = await listed('list after two creates');
    expect(
      grown.total === String(Number(before.total) + 2),
      `totalCount ${Number(before.total) + 2} right after two creates`,
      grown.total,
      grown.x,
    );
    expect(grown.uids.includes(a.uid) && grown.uids.includes(b.uid), 'both new records listed', grown.uids, grown.x);
    const gone = await fx.client.call('DELETE', `${p.base}/${a.uid}`);
    expectOk(gone, 'delete one');
    const shrunk = await listed('list after a delete');
    expect(
      shrunk.total === String(Number(before.total) + 1),
      `totalCount ${Number(before.total) + 1} right after a delete`,
      shrunk.total,
      shrunk.x,
    );
    expect(!shrunk.uids.includes(a.uid), 'the deleted record no longer listed', shrunk.uids, shrunk.x);
  },
  'list/page-size-bounds': async (fx, p) => {
    const parent = await listParent(fx, p);
    const big = await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '1000' }));
    const b = expectOk(big, 'page_size=1000 (more than the maximum)');
    expect(b[p.collection].length <= 200, 'at most 200 items', b[p.collection].length, big);
    expectError(await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '-1' })), 3, 'INVALID_ARGUMENT');
  },
  'list/page-walk-size-1': (fx, p) => checkOrderedWalk(fx, p, 'uid', false, 1),
  'list/page-walk-size-7': (fx, p) => checkOrderedWalk(fx, p, 'uid', false, 7),
  'list/order-by-*': async (fx, p, arg) => {
    const desc = arg.endsWith('-desc');
    await checkOrderedWalk(fx, p, desc ? arg.slice(0, -5) : arg, desc, 3);
  },
  'list/skip': async (fx, p) => {
    const { parent } = await fx.walkSet(p);
    const all = expectOk(await fx.client.call('GET', fx.listUrl(p, parent, { order_by: 'uid' })), 'list')[
      p.collection
    ].map((i: any) => i.uid);
    const x = await fx.client.call('GET', fx.listUrl(p, parent, { order_by: 'uid', skip: '3', page_size: '2' }));
    const b = expectOk(x, 'list with skip=3');
    expect(
      JSON.stringify(b[p.collection].map((i: any) => i.uid)) === JSON.stringify(all.slice(3, 5)),
      'the 4th and 5th records',
      b[p.collection].map((i: any) => i.uid),
      x,
    );
    expect(b.skipped === 3, 'skipped 3', b.skipped, x);
    expect(b.totalCount === String(all.length), `totalCount ${all.length} (skip does not change it)`, b.totalCount, x);
  },
  'list/page-token-bound-to-query': async (fx, p) => {
    const { parent } = await fx.walkSet(p);
    const first = expectOk(
      await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '2', order_by: 'uid' })),
      'first page',
    );
    expect(!!first.nextPageToken, 'a nextPageToken on a first page of 2 out of 8', first, undefined);
    const x = await fx.client.call(
      'GET',
      fx.listUrl(p, parent, { page_size: '2', order_by: 'uid desc', page_token: first.nextPageToken }),
    );
    expectError(x, 3, 'INVALID_ARGUMENT');
  },
  'list/page-token-tamper-rejected': async (fx, p) => {
    const { parent } = await fx.walkSet(p);
    const first = expectOk(
      await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '2', order_by: 'uid' })),
      'first page',
    );
    const token: string = first.nextPageToken;
    const i = Math.floor(token.length / 2);
    const tampered = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
    expectError(
      await fx.client.call('GET', fx.listUrl(p, parent, { page_size: '2', order_by: 'uid', page_token: tampered })),
      3,
      'INVALID_ARGUMENT',
    );
  },
  'list/children-of-vs-descendants-of': async (fx, p) => {
    const groups = fx.resource('groups');
    const top = await fx.create(groups, fx.root);
    const sub = await fx.create(groups, top.uid);
    const direct = await fx.create(p, top.uid);
    const deep = await fx.create(p, sub.uid);
    // Listing groups also shows the subgroup made for this rule.
    const extra = p.collection === 'groups' ? [sub.uid] : [];
    const c = await fx.client.call('GET', `${p.base}?uidp.children_of=${top.uid}`);
    const listed = expectOk(c, 'children_of');
    const children = listed[p.collection].map((i: any) => i.uid).sort();
    expect(
      JSON.stringify(children) === JSON.stringify([direct.uid, ...extra].sort()),
      'children_of to return direct children only',
      children,
      c,
    );
    const d = await fx.client.call('GET', `${p.base}?uidp.descendants_of=${top.uid}`);
    const below = expectOk(d, 'descendants_of');
    const got = below[p.collection].map((i: any) => i.uid).sort();
    expect(
      JSON.stringify(got) === JSON.stringify([direct.uid, deep.uid, ...extra].sort()),
      'descendants_of to return everything below, not the node itself',
      got,
      d,
    );
  },
  'list/filter-*': async (fx, p, param) => {
    const f = p.filters.find((x) => x.param === param)!;
    const { parent, records } = await fx.walkSet(p);
    const target = records[3];
    if (target[f.field] === undefined) throw new Skip(`records made from the plan have no ${f.field}`);
    const x = await fx.client.call('GET', fx.listUrl(p, parent, { [param]: String(target[f.field]) }));
    const items = expectOk(x, `list filtered by ${param}`)[p.collection];
    expect(
      items.length >= 1 && items.every((i: any) => i[f.field] === target[f.field]),
      `only records whose ${f.field} is ${JSON.stringify(target[f.field])}`,
      items.map((i: any) => i[f.field]),
      x,
    );
    expect(
      items.some((i: any) => i.uid === target.uid),
      `the record ${target.uid}`,
      items.map((i: any) => i.uid),
      x,
    );
  },
  'update/no-mask-changes-present-fields': async (fx, p) => {
    const created = await fx.create(p, await fx.sharedParent(p));
    const field = p.update?.field ?? Object.keys(p.createBody)[0];
    const value = p.update?.value ?? created[field];
    const x = await fx.client.call('PATCH', `${p.base}/${created.uid}`, { [field]: value });
    const b = expectOk(x, `update ${p.type}`);
    expect(b[field] === value, `${field} to be ${JSON.stringify(value)}`, b[field], x);
    for (const k of Object.keys(p.createBody)) {
      if (k !== field) expect(JSON.stringify(b[k]) === JSON.stringify(created[k]), `${k} unchanged`, b[k], x);
    }
  },
  'update/mask-ignores-other-fields': async (fx, p) => {
    const u = p.update!;
    const created = await fx.create(p, await fx.sharedParent(p));
    const x = await fx.client.call('PATCH', `${p.base}/${created.uid}?updateMask=${u.field}`, {
      [u.field]: u.value,
      [u.other]: u.otherValue,
    });
    const b = expectOk(x, `update ${p.type} with updateMask=${u.field}`);
    expect(b[u.field] === u.value, `${u.field} to be ${JSON.stringify(u.value)}`, b[u.field], x);
    expect(
      JSON.stringify(b[u.other]) === JSON.stringify(created[u.other]),
      `${u.other} outside the mask to stay ${JSON.stringify(created[u.other])}`,
      b[u.other],
      x,
    );
    const again = expectOk(await fx.client.call('GET', `${p.base}/${created.uid}`), 'get after update');
    expect(JSON.stringify(again) === JSON.stringify(b), 'get to return the updated resource', again, x);
  },
  'update/star-replaces': async (fx, p) => {
    const u = p.update!;
    const created = await fx.create(p, await fx.sharedParent(p), { ...(await fx.variant(p)), [u.field]: u.value });
    const body = { ...p.createBody, ...(await fx.variant(p)), [u.other]: u.otherValue };
    delete body[u.field];
    const x = await fx.client.call('PATCH', `${p.base}/${created.uid}?updateMask=*`, body);
    const b = expectOk(x, `update ${p.type} with updateMask=*`);
    expect(unset(b[u.field]), `${u.field}, absent from the body, to be reset`, b[u.field], x);
    expect(b[u.other] === u.otherValue, `${u.other} to be ${JSON.stringify(u.otherValue)}`, b[u.other], x);
  },
  'update/unknown-mask-rejected': async (fx, p) => {
    const created = await fx.create(p, await fx.sharedParent(p));
    expectError(
      await fx.client.call('PATCH', `${p.base}/${created.uid}?updateMask=noSuchField`, {}),
      3,
      'INVALID_ARGUMENT',
      'BadRequest',
    );
  },
  'delete/then-not-found': async (fx, p) => {
    const created = await fx.create(p, await fx.freshParent(p));
    const x = await fx.client.call('DELETE', `${p.base}/${created.uid}`);
    expect(x.status === 200, 'HTTP 200', `HTTP ${x.status} ${JSON.stringify(x.body)}`, x);
    expect(x.body === undefined || JSON.stringify(x.body) === '{}', 'an empty body', x.body, x);
    expectError(await fx.client.call('GET', `${p.base}/${created.uid}`), 5, 'NOT_FOUND', 'ResourceInfo');
  },
  'delete/refused-when-not-empty': async (fx, p) => {
    const child = fx.resource(p.restrictingChildren.find((c) => c !== p.collection) ?? p.restrictingChildren[0]);
    const holder = await fx.create(p, await fx.sharedParent(p));
    await fx.create(child, holder.uid);
    const x = await fx.client.call('DELETE', `${p.base}/${holder.uid}`);
    const b = expectError(x, 9, 'FAILED_PRECONDITION', 'PreconditionFailure');
    const pf = b.details.find((d: any) => d['@type'].endsWith('google.rpc.PreconditionFailure'));
    expect(
      pf.violations?.some((v: any) => v.type === 'RESOURCE_NOT_EMPTY'),
      'a RESOURCE_NOT_EMPTY violation',
      pf.violations,
      x,
    );
    expectOk(await fx.client.call('GET', `${p.base}/${holder.uid}`), 'the refused record to still exist');
  },
};

const withoutToken = { authorization: '' };

export const apiRuleChecks: Record<string, (fx: Fixture) => Promise<void>> = {
  'api/unknown-route-not-found': async (fx) => {
    expectError(await fx.client.call('GET', `/registry/${fx.plan.version}/no-such-collection`), 5, 'NOT_FOUND');
  },
  'api/malformed-json-invalid-argument': async (fx) => {
    const groups = fx.resource('groups');
    expectError(
      await fx.client.call('POST', `${groups.base}/${fx.root}`, '{"name":', { 'content-type': 'application/json' }),
      3,
      'INVALID_ARGUMENT',
    );
  },
  'api/error-body-shape': async (fx) => {
    const groups = fx.resource('groups');
    const x = await fx.client.call('POST', `${groups.base}/${fx.root}`, {});
    const b = expectError(x, 3, 'INVALID_ARGUMENT', 'BadRequest');
    const info = b.details.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
    // Spec 7: the domain of an IAM error is iam.<service>.dev.
    expect(/^iam\.[a-z0-9-]+\.dev$/.test(info.domain ?? ''), 'ErrorInfo.domain iam.<service>.dev', info, x);
    expect(
      !/\bat .+:\d+:\d+|SQLITE|SELECT |INSERT /i.test(JSON.stringify(b)),
      'no stack trace or SQL in the body',
      b,
      x,
    );
  },
  'api/no-token-unauthenticated': async (fx) => {
    const groups = fx.resource('groups');
    const x = await fx.client.call('GET', `${groups.base}/${fx.root}`, undefined, withoutToken);
    if (x.status === 200) throw new Skip('the target answers without a token (no access control)');
    expectError(x, 16, 'UNAUTHENTICATED');
  },
  'api/bad-token-unauthenticated': async (fx) => {
    const groups = fx.resource('groups');
    const forged = `${Buffer.from('{"alg":"ES256","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2lnbmF0dXJl`;
    const x = await fx.client.call('GET', `${groups.base}/${fx.root}`, undefined, {
      authorization: `Bearer ${forged}`,
    });
    if (x.status === 200) throw new Skip('the target answers a forged token (no access control)');
    expectError(x, 16, 'UNAUTHENTICATED');
  },
  'api/low-privilege-permission-denied': async (fx) => {
    if (!fx.client.lowPrivilegeToken) throw new Skip('run with --low-privilege-token to check 403s');
    const groups = fx.resource('groups');
    const auth = { authorization: `Bearer ${fx.client.lowPrivilegeToken}` };
    const create = await fx.client.call('POST', `${groups.base}/${fx.root}`, { name: 'not-allowed' }, auth);
    if (create.status === 200 && create.body?.uid) fx.created.push({ base: groups.base, uid: create.body.uid });
    expectError(create, 7, 'PERMISSION_DENIED');
    expectError(
      await fx.client.call('GET', `${groups.base}/${missingUid(fx)}`, undefined, auth),
      7,
      'PERMISSION_DENIED',
    );
  },
};

/** The headers of an HTTP answer; over gRPC there are none to read. */
function headersOf(x: Exchange): Record<string, string> {
  if (!x.headers) throw new Skip('headers are read over HTTP only');
  return x.headers;
}

const isJson = (x: Exchange) => /^application\/json\b/i.test(headersOf(x)['content-type'] ?? '');

/** Spec 9.3: v2 is generally available; no response of it carries deprecation or sunset headers. */
function expectNoDeprecation(x: Exchange): void {
  const h = headersOf(x);
  expect(h.deprecation === undefined && h.sunset === undefined, 'no Deprecation or Sunset header', h, x);
}

/** Rules about the API as a whole, beyond any one resource's (spec sections 2, 4, 5 and 9). */
export const apiShapeChecks: Record<string, (fx: Fixture) => Promise<void>> = {
  'api/built-in-viewer-role': async (fx) => {
    const roles = fx.resource('roles');
    const x = await fx.client.call('GET', `${roles.base}?name=viewer`);
    const viewer = expectOk(x, 'list roles named viewer').roles?.find((r: any) => r.name === 'viewer');
    expect(!!viewer, 'a built-in role named viewer', x.body, x);
    expect(/^[0-9a-f]+$/.test(viewer.uid), "a built-in role's uid: plain hexadecimal", viewer.uid, x);
    // The suite's own group is a root group unless --parent named another.
    if (!fx.root.includes('/'))
      expect(/^[0-9a-f]+$/.test(fx.root), "a root group's uid: plain hexadecimal", fx.root, x);
  },
  'api/json-answers': async (fx) => {
    const groups = fx.resource('groups');
    const ok = await fx.client.call('GET', `${groups.base}/${fx.root}`);
    expectOk(ok, 'get the suite group');
    expect(isJson(ok), 'Content-Type: application/json', headersOf(ok)['content-type'], ok);
    const refused = await fx.client.call('GET', `${groups.base}/${missingUid(fx)}`);
    expect(isJson(refused), 'an error answered as application/json too', headersOf(refused)['content-type'], refused);
    expectNoDeprecation(ok);
  },
  'api/identity-create-shows-last-seen': async (fx) => {
    const identities = fx.resource('identities');
    const x = await fx.client.call('POST', `${identities.base}/${fx.root}`, await fx.variant(identities));
    const made = expectOk(x, 'create an identity');
    fx.created.push({ base: identities.base, uid: made.uid });
    expect(rfc3339ms.test(made.lastSeenTime ?? ''), 'lastSeenTime in the create answer', made.lastSeenTime, x);
  },
  'api/role-binding-hydrated': async (fx) => {
    const [identities, roles, bindings] = ['identities', 'roles', 'roleBindings'].map((c) => fx.resource(c));
    const who = await fx.create(identities, fx.root);
    const viewer = expectOk(await fx.client.call('GET', `${roles.base}?name=viewer`), 'viewer').roles?.[0];
    if (!viewer) throw new Skip('the target has no viewer role');
    const x = await fx.client.call('POST', `${bindings.base}/${fx.root}`, {
      identityUid: who.uid,
      roleUid: viewer.uid,
    });
    const b = expectOk(x, 'create a role binding');
    fx.created.push({ base: bindings.base, uid: b.uid });
    // Every nested field the spec documents; over gRPC an empty string is not on the wire, so it may be absent.
    const has = (o: any, keys: string[]) =>
      typeof o === 'object' &&
      o !== null &&
      keys.every((k) => typeof o[k] === 'string' || (x.rpc !== undefined && o[k] === undefined));
    const named = ['uid', 'name', 'description'];
    expect(
      has(b.identity, [...named, 'subject', 'issuer']) && b.identity.uid === who.uid,
      'identity {uid, name, description, subject, issuer}',
      b.identity,
      x,
    );
    expect(has(b.group, named) && b.group.uid === fx.root, `group {uid: ${fx.root}, name, description}`, b.group, x);
    expect(has(b.role, named) && b.role.uid === viewer.uid, 'role {uid, name, description}', b.role, x);
    expect(rfc3339ms.test(b.createTime ?? ''), 'createTime', b.createTime, x);
    expect(b.updateTime === undefined, 'no updateTime in the create answer', b.updateTime, x);
  },
  'api/tags-deprecated-listed': async (fx) => {
    const [repos, tags] = ['repos', 'tags'].map((c) => fx.resource(c));
    const repo = await fx.create(repos, fx.root);
    const current = await fx.create(tags, repo.uid);
    const old = await fx.create(tags, repo.uid, { ...(await fx.variant(tags)), deprecated: true });
    const x = await fx.client.call('GET', `${tags.base}?uidp.children_of=${repo.uid}`);
    const listed = expectOk(x, "list the repo's tags").tags ?? [];
    // Spec 4 rule 6: no server-side filter on deprecated; clients filter the listed tags themselves.
    const uids = listed.map((t: any) => t.uid);
    expect(
      uids.includes(current.uid) && uids.includes(old.uid),
      'the deprecated tag listed beside the current one',
      uids,
      x,
    );
    for (const t of listed) {
      expect(typeof t.name === 'string' && t.name.length > 0, 'a tag name', t, x);
      expect(/^sha256:[0-9a-f]+$/.test(t.digest ?? ''), 'a digest sha256:<hex>', t.digest, x);
      expect(rfc3339ms.test(t.updateTime ?? ''), 'updateTime', t.updateTime, x);
    }
    const shown = listed.find((t: any) => t.uid === old.uid);
    expect(shown.deprecated === true, 'deprecated: true on the end-of-life tag', shown, x);
    expect(
      unset(listed.find((t: any) => t.uid === current.uid).deprecated),
      'the current tag not deprecated',
      listed,
      x,
    );
  },
  'api/v1-beside-v2': async (fx) => {
    // Spec 9.1 gives the v1 prefixes; /iam/v1/groups is the reference's v1 list of groups.
    const x = await fx.client.call('GET', '/iam/v1/groups');
    expect(
      x.status === 200,
      'v1 answering with the same token as v2 (HTTP 200)',
      `HTTP ${x.status} ${JSON.stringify(x.body)}`,
      x,
    );
    expectNoDeprecation(x);
  },
};

/** Rules of the gRPC surfaces no HTTP route mirrors: the v2 services under their v2beta1 names, the token service. */
export const grpcSurfaceChecks: Record<string, (fx: Fixture) => Promise<void>> = {
  'api/v2beta1-names': async (fx) => {
    if (!fx.client.rpc) throw new Skip('the v2beta1 names are names of gRPC services (run with --protocol grpc)');
    const repos = fx.resource('repos');
    const rpcOf = (method: string, path: string) => {
      const found = fx.plan.rpcs.find((r) => r.method === method && r.path === path);
      if (!found) throw new Skip(`the plan has no rpc for ${method} ${path}`);
      return found.grpc;
    };
    const made = await fx.create(repos, fx.root);
    const get = rpcOf('GET', `${repos.base}/{uid}`);
    const list = rpcOf('GET', repos.base);
    const beta = (path: string) => path.replace(`.${fx.plan.version}.`, '.v2beta1.');
    const x = await fx.client.rpc(beta(get), { uid: made.uid });
    if (x.status === statusOf[12]) throw new Skip(`the target does not serve ${beta(get)} (UNIMPLEMENTED)`);
    const v2 = expectOk(await fx.client.rpc(get, { uid: made.uid }), `${get}`);
    // Spec 9.2: v2beta1 was renamed v2 with the shapes unchanged: where the old name answers, it answers the same.
    expect(
      JSON.stringify(expectOk(x, beta(get))) === JSON.stringify(v2),
      `${beta(get)} answering as ${get}`,
      x.body,
      x,
    );
    const query = { uidp: { childrenOf: fx.root } };
    const y = await fx.client.rpc(beta(list), query);
    const listed = expectOk(await fx.client.rpc(list, query), list);
    expect(
      JSON.stringify(expectOk(y, beta(list))) === JSON.stringify(listed),
      `${beta(list)} answering as ${list}`,
      y.body,
      y,
    );
  },
  'api/token-exchange-grpc': async (fx) => {
    if (!fx.client.rpc) throw new Skip('the token service is a gRPC service (run with --protocol grpc)');
    const forged = `${Buffer.from('{"alg":"ES256","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2lnbmF0dXJl`;
    const x = await fx.client.rpc(
      '/chainguard.platform.oidc.SecurityTokenService/Exchange',
      { identity: missingUid(fx) },
      { authorization: `Bearer ${forged}` },
    );
    expectError(x, 16, 'UNAUTHENTICATED');
  },
};

export function ruleFor(rule: string): { fn: RuleFn; arg: string } | undefined {
  if (resourceRules[rule]) return { fn: resourceRules[rule], arg: '' };
  for (const [pattern, fn] of Object.entries(resourceRules)) {
    if (pattern.endsWith('*') && rule.startsWith(pattern.slice(0, -1)))
      return { fn, arg: rule.slice(pattern.length - 1) };
  }
  return undefined;
}
