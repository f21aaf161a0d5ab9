// What of a resource a caller may list, as authorization decides it, and the conditions that confine a list's
// query to it: read by the list query and its total count, below the access layer that decides.
import { equal, isNull, or, range, type Condition } from '../tables/condition.js';
import { descendantRange } from '../model/uid.js';

/** What a caller may list of a resource: everything, or the records at and below some groups (and root records). */
export type Visible = { all: true } | { all: false; groups: readonly string[]; publicRootRecords: boolean };

/** The conditions that confine a query to what is visible. */
export function visibleWhere(visible: Visible): Condition[] {
  if (visible.all) return [];
  const anyOf: Condition[] = visible.groups.flatMap((g) => [equal('uid', g), range('uid', descendantRange(g))]);
  if (visible.publicRootRecords) anyOf.push(isNull('parentUid'));
  return [or(...anyOf)];
}
