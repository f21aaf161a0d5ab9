// The parameters every List takes (AIP-158 plus skip and hierarchy filters), read from a validated query.
import { invalidArgument } from '../model/errors.js';
import { filterField, type FieldType, type FilterModel, type ResourceModel } from '../model/api-model.js';
import { canonicalTimestamp } from '../model/records.js';

export const defaultPageSize = 50;
export const maxPageSize = 200;
/**
 * The most rows a list may skip: past a few pages, page tokens continue where a page ended at the cost of the
 * first page, while a skip reads every row it skips.
 */
export const maxSkip = 100_000;
/** Distinct values one list parameter may hold: the reference's own limit for vulnerability ids (1000 unique). */
export const maxListValues = 1000;

export interface HierarchyFilter {
  descendantsOf?: string;
  childrenOf?: string;
  ancestorsOf?: string;
  inRoot?: boolean;
  ids?: string[];
}

export interface ListRequest {
  pageSize: number;
  pageToken?: string;
  skip: number;
  order: { key: string; field: string; desc: boolean };
  hierarchy: HierarchyFilter;
  filters: { filter: FilterModel; value: unknown }[];
}

type Query = Record<string, unknown>;

/** Reads a parameter under its snake_case name or its camelCase alias. */
function param<T>(q: Query, snake: string, camel?: string): T | undefined {
  return (q[snake] ?? (camel ? q[camel] : undefined)) as T | undefined;
}

export function parseOrderBy(raw: string | undefined, r: ResourceModel): ListRequest['order'] {
  if (raw === undefined || raw.trim() === '') {
    return { key: r.defaultOrder.key, field: r.orderBy[r.defaultOrder.key], desc: r.defaultOrder.desc };
  }
  const m = /^\s*([A-Za-z_]+)(?:\s+(asc|desc))?\s*$/i.exec(raw);
  const field = m && Object.hasOwn(r.orderBy, m[1]) ? r.orderBy[m[1]] : undefined;
  if (!m || !field) {
    throw invalidArgument([
      {
        field: 'order_by',
        description: `must be one of ${Object.keys(r.orderBy).join(', ')}, optionally followed by " desc"`,
      },
    ]);
  }
  return { key: m[1], field, desc: (m[2] ?? '').toLowerCase() === 'desc' };
}

/**
 * A parameter that may be repeated or comma-separated, as its distinct strings (a schema may not have made it a
 * list); more than maxListValues is INVALID_ARGUMENT, before any statement is made for them.
 */
export function listValues(value: unknown, field: string): string[] {
  const values = [...new Set([value ?? []].flat().flatMap((v) => String(v).split(',')))].filter(Boolean);
  if (values.length > maxListValues)
    throw invalidArgument([{ field, description: `at most ${maxListValues} distinct values, not ${values.length}` }]);
  return values;
}

/** A count from the query: a whole number from 0 to max (AJV's integer lets 1e99 and Infinity through). */
function count(
  q: Query,
  field: string,
  snake: string,
  camel?: string,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const value = param<number>(q, snake, camel);
  if (value === undefined) return undefined;
  if (value < 0) throw invalidArgument([{ field, description: 'must not be negative' }]);
  if (!Number.isSafeInteger(value) || value > max)
    throw invalidArgument([{ field, description: `must be a whole number no larger than ${max}` }]);
  return value;
}

/** A filter value in the form stored values have, so that equal values compare equal. */
function storedForm(value: unknown, type: FieldType): unknown {
  if (Array.isArray(value)) return value.map((v) => storedForm(v, type));
  if (type === 'timestamp' && typeof value === 'string') return canonicalTimestamp(value);
  if (type === 'int64' && (typeof value === 'string' || typeof value === 'number')) return BigInt(value).toString();
  return value;
}

export function parseListRequest(q: Query, r: ResourceModel): ListRequest {
  const pageSize = count(q, 'page_size', 'page_size', 'pageSize');
  const skip = count(q, 'skip', 'skip', undefined, maxSkip) ?? 0;
  const ids = listValues(param(q, 'uidp.ids'), 'uidp.ids');
  return {
    pageSize: pageSize === undefined || pageSize === 0 ? defaultPageSize : Math.min(pageSize, maxPageSize),
    pageToken: param<string>(q, 'page_token', 'pageToken') || undefined,
    skip,
    order: parseOrderBy(param<string>(q, 'order_by', 'orderBy'), r),
    hierarchy: {
      descendantsOf: param<string>(q, 'uidp.descendants_of', 'uidp.descendantsOf') || undefined,
      childrenOf: param<string>(q, 'uidp.children_of', 'uidp.childrenOf') || undefined,
      ancestorsOf: param<string>(q, 'uidp.ancestors_of', 'uidp.ancestorsOf') || undefined,
      inRoot: param<boolean>(q, 'uidp.in_root', 'uidp.inRoot') || undefined,
      ids: ids && ids.length > 0 ? ids : undefined,
    },
    filters: r.filters
      .filter((f) => q[f.param] !== undefined && q[f.param] !== '')
      .map((f) => {
        const value = f.match === 'anyOf' ? listValues(q[f.param], f.param) : q[f.param];
        return { filter: f, value: storedForm(value, filterField(r, f).type) };
      }),
  };
}
