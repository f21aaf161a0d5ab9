// The list query (AIP-132/158): a list request's hierarchy and filters as conditions, its order with uid breaking
// ties, and a page read with them: keyset after the page token's cursor, never OFFSET, so page 2000 costs what
// page 1 costs; the next page token bound to the query; the total count.
import { invalidArgument } from '../model/errors.js';
import type { Row } from '../model/records.js';
import { ancestorsOf, checkUid, descendantRange } from '../model/uid.js';
import type { Sql } from '../storage/sql.js';
import type { AnswerForm } from '../tables/answer-forms.js';
import {
  and,
  contains,
  equal,
  everything,
  isNull,
  notNull,
  oneOf,
  or,
  range,
  type Condition,
  type Value,
} from '../tables/condition.js';
import type { Order, Table } from '../tables/table.js';
import type { ListRequest } from './list-request.js';
import { PageToken, type Cursor } from './page-token.js';
import { scopeTotal, type ListScope } from './total-count.js';

export interface ListResult<T = Row> {
  items: T[];
  nextPageToken: string;
  totalCount: string;
  skipped: number;
}

function hierarchyWhere(req: ListRequest): Condition[] {
  const h = req.hierarchy;
  const where: Condition[] = [];
  if (h.descendantsOf) {
    checkUid(h.descendantsOf, 'uidp.descendants_of');
    where.push(range('uid', descendantRange(h.descendantsOf)));
  }
  if (h.childrenOf) {
    checkUid(h.childrenOf, 'uidp.children_of');
    where.push(equal('parentUid', h.childrenOf));
  }
  if (h.ancestorsOf) {
    checkUid(h.ancestorsOf, 'uidp.ancestors_of');
    where.push(oneOf('uid', ancestorsOf(h.ancestorsOf)));
  }
  if (h.inRoot) where.push(isNull('parentUid'));
  if (h.ids) where.push(oneOf('uid', h.ids));
  return where;
}

/** A filter's value, as validated against its field's schema: scalars, or a list of them for anyOf. */
const scalar = (value: unknown) => value as Value;

function filterWhere(req: ListRequest): Condition[] {
  return req.filters.map(({ filter, value }) => {
    const property = filter.field === 'parent' ? 'parentUid' : filter.field!;
    switch (filter.match) {
      case 'exact':
        return equal(property, scalar(value));
      case 'anyOf':
        return oneOf(property, value as Value[]);
      case 'contains':
        return contains(property, String(value));
      case 'atLeast':
        return range(property, { gte: scalar(value) });
      case 'atMost':
        return range(property, { lte: scalar(value) });
      case 'set': {
        const field = filter.fields![String(value)];
        return field ? notNull(field) : everything();
      }
    }
  });
}

/** The conditions of the request's hierarchy filters and its resource's own filters. */
export function listConditions(req: ListRequest): Condition[] {
  return [...hierarchyWhere(req), ...filterWhere(req)];
}

/** Rows strictly after the cursor in (field, uid) order; SQLite puts NULLs first ascending, last descending. */
function afterCursor(field: string, desc: boolean, c: Cursor): Condition {
  const beyond = (property: string, value: Value) => range(property, desc ? { lt: value } : { gt: value });
  if (field === 'uid') return beyond('uid', c.uid);
  if (c.key === null) {
    return desc
      ? and(isNull(field), range('uid', { lt: c.uid }))
      : or(notNull(field), and(isNull(field), range('uid', { gt: c.uid })));
  }
  const tie = and(equal(field, c.key), beyond('uid', c.uid));
  return desc ? or(range(field, { lt: c.key }), isNull(field), tie) : or(beyond(field, c.key), tie);
}

/** The request's order, with uid breaking ties. */
export function listOrder(req: ListRequest): Order[] {
  const { field, desc } = req.order;
  return field === 'uid'
    ? [{ property: 'uid', desc }]
    : [
        { property: field, desc },
        { property: 'uid', desc },
      ];
}

/** Where a page is read, besides its table and request. */
export interface PageQuery<I> {
  /** the collection listed: a page token of another list is refused */
  collection: string;
  /** conditions the caller cannot see past (a nested list's parent, visibility) */
  scope: Condition[];
  /** the same for the per-scope counts, which give totalCount where the list is a scope */
  counting?: ListScope;
  form: AnswerForm<I>;
  pageTokens: PageToken;
  /** the reader of statements that may read a large range, off the main thread */
  slowRead: Sql;
}

/** One page of the list the request asks for, with the token of the next and the total count. */
export async function readPage<I>(table: Table, req: ListRequest, q: PageQuery<I>): Promise<ListResult<I>> {
  const base: Condition[] = [...q.scope, ...listConditions(req)];
  const digest = PageToken.queryDigest({
    resource: q.collection,
    order: `${req.order.field} ${req.order.desc ? 'desc' : 'asc'}`,
    hierarchy: req.hierarchy,
    filters: req.filters.map((f) => [f.filter.param, f.value]),
    scope: JSON.stringify(q.scope),
  });
  let cursor: Cursor | undefined;
  if (req.pageToken) {
    const read = q.pageTokens.read(req.pageToken, digest);
    if (read.status === 'invalid')
      throw invalidArgument([{ field: 'page_token', description: `invalid page token: ${read.reason}` }]);
    if (read.status === 'valid') cursor = read.cursor;
  }
  const { field, desc } = req.order;
  const where = and(...base, ...(cursor ? [afterCursor(field, desc, cursor)] : []));
  // A filter the order's index does not serve, or a long skip, may read a large range: off the main thread.
  const reader = req.filters.length > 0 || req.skip >= 1000 ? q.slowRead : undefined;
  const rows = await table.findValues(
    where,
    listOrder(req),
    req.pageSize + 1,
    req.skip > 0 ? req.skip : undefined,
    reader,
    q.form.selection,
  );
  const total = (q.counting && (await scopeTotal(table, req, q.counting))) ?? (await table.count(and(...base)));
  const page = rows.slice(0, req.pageSize);
  const last = page.length > 0 ? table.recordOf(page[page.length - 1], q.form.selection) : undefined;
  const more = rows.length > req.pageSize;
  return {
    items: page.map(q.form.item),
    nextPageToken:
      more && last
        ? q.pageTokens.issue(digest, { key: (last[field] ?? null) as Cursor['key'], uid: last.uid as string })
        : '',
    totalCount: String(total),
    skipped: req.skip,
  };
}
