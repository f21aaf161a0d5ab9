// The generic rules: what the plan derives for any API built with the framework, from its resources' declarations
// (fields, operations, orders, filters, children) and the conventions every API shares (errors, tokens, JSON).
// A rule reads the plan of its resource, creates what it needs under the suite's group through the public API,
// and fails with what it expected, what came back and the request behind it.
import { failingFields, type ResourcePlan } from './plan.js';
import { expect, expectError, expectOk, Skip, statusOf, type Exchange } from './client.js';
import {
  type ApiCheck,
  expectFieldViolation,
  expectNoDeprecation,
  type Fixture,
  forgedToken,
  headersOf,
  isJson,
  missingUid,
  rfc3339ms,
  type RuleFn,
  unset,
  withoutToken,
} from './fixture.js';

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
  // Absent values first, then by the field's type (numbers as numbers), ties by uid.
  const compare = compareAs(p.varied[field]?.type ?? 'string');
  const byField = (a: unknown, b: unknown) =>
    a === undefined || a === null ? (b === undefined || b === null ? 0 : -1) : b == null ? 1 : compare(a, b);
  const sorted = [...items].sort((a, b) => byField(a[field], b[field]) || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
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

/** Values of a filter's field in order: numbers as numbers, int64s as big integers, the rest as text (RFC 3339). */
function compareAs(type: string): (a: unknown, b: unknown) => number {
  if (type === 'int64')
    return (a, b) => Number(BigInt(String(a)) - BigInt(String(b)) > 0n) - Number(BigInt(String(a)) < BigInt(String(b)));
  if (type === 'int32' || type === 'double') return (a, b) => Number(a) - Number(b);
  return (a, b) => (String(a) < String(b) ? -1 : String(a) === String(b) ? 0 : 1);
}

/**
 * What a filter is sent and which records it keeps, by its kind: exact and contains from one record's value (a
 * contains probe is that value's distinct tail), anyOf two records' values, atLeast and atMost the middle record's
 * value as a bound, so that records fall on both sides of it.
 */
function filterProbe(
  f: ResourcePlan['filters'][number],
  records: any[],
  target: any,
): { value: string | string[]; keeps: (v: unknown) => boolean; says: string } {
  const v = target[f.field];
  const compare = compareAs(f.type);
  switch (f.match) {
    case 'anyOf': {
      const values = [...new Set([String(records[1][f.field]), String(v)])];
      return { value: values, keeps: (x) => values.includes(String(x)), says: `is one of ${values.join(', ')}` };
    }
    case 'contains': {
      const part = String(v).slice(-4);
      return { value: part, keeps: (x) => String(x ?? '').includes(part), says: `contains ${JSON.stringify(part)}` };
    }
    case 'atLeast':
      return { value: String(v), keeps: (x) => x !== undefined && compare(x, v) >= 0, says: `is at least ${v}` };
    case 'atMost':
      return { value: String(v), keeps: (x) => x !== undefined && compare(x, v) <= 0, says: `is at most ${v}` };
    default:
      return {
        value: String(v),
        keeps: (x) => JSON.stringify(x) === JSON.stringify(v),
        says: `is ${JSON.stringify(v)}`,
      };
  }
}

/**
 * A caller's operations on a record, each refused (PERMISSION_DENIED; a list shows none of it), by a caller
 * without one capability they need, or by one bound to no role. The caller without one capability may still get
 * the record where get needs another: its token is a working one.
 */
async function refusedOperations(
  fx: Fixture,
  p: ResourcePlan,
  made: any,
  caller: { without?: string; token: string; ops: string[] },
): Promise<void> {
  const auth = { authorization: `Bearer ${caller.token}` };
  const who = caller.without ? `a caller holding every capability but ${caller.without}` : 'a caller bound to no role';
  const first = Object.keys(p.createBody)[0] ?? 'description';
  for (const op of caller.ops) {
    if (op === 'list') {
      // A list is not refused: it shows what the caller may see, which without the capability is none of it.
      const x = await fx.client.call('GET', fx.listUrl(p, await fx.sharedParent(p)), undefined, auth);
      if (x.status !== 200) expectError(x, 7, 'PERMISSION_DENIED');
      else
        expect(
          !(x.body[p.collection] ?? []).some((i: any) => i.uid === made.uid),
          `a list by ${who} showing none of the records`,
          x.body,
          x,
        );
      continue;
    }
    const x =
      op === 'create'
        ? await fx.client.call('POST', await fx.createPath(p, await fx.sharedParent(p)), await fx.variant(p), auth)
        : op === 'get'
          ? await fx.client.call('GET', `${p.base}/${made.uid}`, undefined, auth)
          : op === 'update'
            ? await fx.client.call('PATCH', `${p.base}/${made.uid}`, { [first]: made[first] }, auth)
            : await fx.client.call('DELETE', `${p.base}/${made.uid}`, undefined, auth);
    if (x.status === 200 && op === 'create' && x.body?.uid) fx.created.push({ base: p.base, uid: x.body.uid });
    expect(
      x.status === statusOf[7],
      `${op} by ${who} (it needs ${p.capabilities[op].join(', ')}) refused: HTTP 403 (PERMISSION_DENIED)`,
      `HTTP ${x.status} ${JSON.stringify(x.body)}`,
      x,
    );
    expectError(x, 7, 'PERMISSION_DENIED');
  }
  if (caller.without && p.operations.includes('get') && !(p.capabilities.get ?? []).includes(caller.without))
    expectOk(
      await fx.client.call('GET', `${p.base}/${made.uid}`, undefined, auth),
      `a get by ${who}, which get does not need`,
    );
}

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
    const b = expectFieldViolation(x, field);
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
    expectFieldViolation(x, field);
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
      expectFieldViolation(x, field);
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
    const { value, keeps, says } = filterProbe(f, records, target);
    const x = await fx.client.call('GET', fx.listUrl(p, parent, { [param]: value, page_size: '50' }));
    const items = expectOk(x, `list filtered by ${param}`)[p.collection];
    expect(
      items.every((i: any) => keeps(i[f.field])),
      `only records whose ${f.field} ${says}`,
      items.map((i: any) => i[f.field]),
      x,
    );
    // Every record of the set the filter keeps, and only those: a filter ignored or too strict shows here.
    const want = records.filter((r) => keeps(r[f.field])).map((r) => r.uid);
    const got = items.map((i: any) => i.uid);
    expect(
      JSON.stringify([...got].sort()) === JSON.stringify([...want].sort()),
      `the ${want.length} of ${records.length} records whose ${f.field} ${says}`,
      got,
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
  'delete/cascades-to-*': async (fx, p, collection) => {
    // The spec declares that records of collection go with their parent: a delete takes them along.
    const child = fx.resource(collection);
    const holder = await fx.create(p, await fx.freshParent(p));
    const held = await fx.create(child, holder.uid);
    const x = await fx.client.call('DELETE', `${p.base}/${holder.uid}`);
    expectOk(x, `delete a ${p.type} holding a ${child.type}`);
    const y = await fx.client.call('GET', `${child.base}/${held.uid}`);
    expect(y.status === statusOf[5], `the ${child.type} gone with its ${p.type} (HTTP 404)`, `HTTP ${y.status}`, y);
    expectError(y, 5, 'NOT_FOUND', 'ResourceInfo');
  },
  'access/each-operation-needs-its-capability': async (fx, p) => {
    // For each capability an operation needs, a caller holding every other: the operations needing it refuse it,
    // over either protocol; a server checking only that a caller holds some role does not.
    const guarded = ['create', 'get', 'update', 'delete', 'list'].filter(
      (op) => p.operations.includes(op) && (p.capabilities[op] ?? []).length > 0,
    );
    const made = await fx.create(p, await fx.sharedParent(p));
    const callers: { without?: string; token: string; ops: string[] }[] = [];
    for (const cap of new Set(guarded.flatMap((op) => p.capabilities[op]))) {
      const caller = await fx.callerWithout([cap]);
      if ('reason' in caller) {
        // Without a way to get such a caller, a caller bound to no role: weaker, and the result says so.
        if (!fx.client.lowPrivilegeToken) throw new Skip(`${caller.reason}; run with --low-privilege-token`);
        fx.notes.push(`checked with --low-privilege-token (a caller bound to no role): ${caller.reason}`);
        callers.splice(0, callers.length, { token: fx.client.lowPrivilegeToken, ops: guarded });
        break;
      }
      callers.push({
        without: cap,
        token: caller.token,
        ops: guarded.filter((op) => p.capabilities[op].includes(cap)),
      });
    }
    for (const caller of callers) await refusedOperations(fx, p, made, caller);
    expectOk(await fx.client.call('GET', `${p.base}/${made.uid}`), `the ${p.type} untouched by the refused calls`);
  },
};

/** Rules of the API as a whole that hold for any API: routes, bodies, errors, tokens. */
export const apiRuleChecks: Record<string, ApiCheck> = {
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
    const x = await fx.client.call('GET', `${groups.base}/${fx.root}`, undefined, {
      authorization: `Bearer ${forgedToken}`,
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
  'api/json-answers': async (fx) => {
    const groups = fx.resource('groups');
    const ok = await fx.client.call('GET', `${groups.base}/${fx.root}`);
    expectOk(ok, 'get the suite group');
    expect(isJson(ok), 'Content-Type: application/json', headersOf(ok)['content-type'], ok);
    const refused = await fx.client.call('GET', `${groups.base}/${missingUid(fx)}`);
    expect(isJson(refused), 'an error answered as application/json too', headersOf(refused)['content-type'], refused);
    expectNoDeprecation(ok);
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
