// A list's totalCount from the per-scope counts (runtime/storage/scope-counts.ts), when its conditions are a hierarchy
// scope and what the caller may see: a few index reads however many records there are. Lists with filters,
// ids or ancestors are counted by SQL instead (docs/transports.md, "HTTP: what every resource gets").
import type { Visible } from './visibility.js';
import type { ListRequest } from './list-request.js';
import type { Table } from '../tables/table.js';
import { within } from '../model/uid.js';

/** What a list is confined to besides its request: the caller's visibility, and the parent of a nested list. */
export interface ListScope {
  visible: Visible;
  parent?: string;
}

type Counted = { kind: 'below' | 'children'; scope: string };

/** The one scope a list counts, or undefined when its conditions are more than a scope. */
function countedScope(req: ListRequest, parent: string | undefined): Counted | undefined {
  if (req.filters.length > 0) return undefined;
  const h = req.hierarchy;
  if (h.ids || h.ancestorsOf) return undefined;
  const given = [
    h.descendantsOf !== undefined && ({ kind: 'below', scope: h.descendantsOf } as const),
    h.childrenOf !== undefined && ({ kind: 'children', scope: h.childrenOf } as const),
    h.inRoot && ({ kind: 'children', scope: '' } as const),
    parent !== undefined && ({ kind: 'children', scope: parent } as const),
  ].filter((c): c is Counted => Boolean(c));
  if (given.length > 1) return undefined;
  return given[0] ?? { kind: 'below', scope: '' };
}

const strictlyWithin = (uid: string, scope: string) => scope === '' || (uid !== scope && within(uid, scope));

/** The groups no other group of the list contains: their subtrees do not overlap, so their counts add up. */
function outermost(groups: readonly string[]): string[] {
  return groups.filter((g) => !groups.some((o) => o !== g && within(g, o)));
}

export async function scopeTotal(table: Table, req: ListRequest, where: ListScope): Promise<number | undefined> {
  const counted = countedScope(req, where.parent);
  if (!counted || !table.counted) return undefined;
  const { kind, scope } = counted;
  const { visible } = where;
  if (visible.all || (scope !== '' && visible.groups.some((g) => within(scope, g)))) {
    const counts = await table.scopeCounts([scope]);
    return counts.get(scope)?.[kind] ?? 0;
  }
  // Root records every caller sees would overlap the groups' subtrees: counted by SQL.
  if (visible.publicRootRecords) return undefined;
  const groups = outermost(visible.groups).filter((g) => strictlyWithin(g, scope));
  const places = await Promise.all(groups.map((g) => table.placeOf(g)));
  if (kind === 'children') return places.filter((p) => p && (p.parentUid ?? '') === scope).length;
  const counts = await table.scopeCounts(groups);
  return groups.reduce((n, g, i) => n + (places[i] ? 1 : 0) + (counts.get(g)?.below ?? 0), 0);
}
