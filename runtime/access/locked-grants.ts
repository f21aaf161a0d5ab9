// The rows that grant an identity its capabilities, read in a write's transaction in one statement, locked until
// it ends: the identity and its role bindings FOR KEY SHARE (neither deleted before the commit), the custom roles
// they bind FOR SHARE (none widened). The built-in roles are not read: they are the spec's, never changed through
// the API (their capabilities come from the model; the owner's are 4 KB of JSON, read and parsed at every write).
// One statement is one round trip on PostgreSQL where reading the three in turn was three, most of a create's.
// A lock cannot reach the nullable side of an outer join, so each table is read by a query of its own, with its
// own lock, in a WITH, and their rows answered together by UNION ALL, tagged with the table they are of (on
// SQLite, one writer at a time and no locks, the same statement reads the same rows).
import type { Sql } from '../storage/sql.js';
import type { Table } from '../tables/table.js';

export interface GrantRows {
  /** the group the identity was made under; null for one made at the root */
  confinedTo: string | null;
  bindings: { parentUid: string; roleUid: string }[];
  /** the capabilities of each bound role, by uid */
  capabilities: Map<string, string[]>;
}

export class LockedGrants {
  private readonly text: string;
  /** the built-in roles' uids as the statement's parameter takes them */
  private readonly builtInParam: unknown;

  constructor(
    identities: Table,
    bindings: Table,
    roles: Table,
    /** the built-in roles' capabilities, by uid */
    private readonly builtIn: ReadonlyMap<string, string[]>,
  ) {
    const { dialect } = roles;
    const [i, b, r] = [identities, bindings, roles];
    const uid = r.sqlColumn('uid');
    const caps = r.sqlColumn('capabilities');
    const isBuiltIn = dialect.oneOf(uid, 'plain', [...builtIn.keys()]);
    this.builtInParam = isBuiltIn.param;
    const bound = `${uid} in (select ${b.sqlColumn('roleUid')} from b)`;
    // Locked identity, bindings, roles, the order a delete of the identity takes them, so the two cannot deadlock:
    // the bindings are read with the identity's uid from i, the roles with the uids from b. Roles answer first:
    // PostgreSQL types a UNION's NULL column by the members before it, and theirs holds the JSON.
    this.text =
      `with i as (select ${i.sqlColumn('uid')} as u, ${i.sqlColumn('parentUid')} as p from ${i.sqlName} ` +
      `where ${i.sqlColumn('uid')} = ?${dialect.lock('keyShare')}), ` +
      `b as (select ${b.sqlColumn('parentUid')}, ${b.sqlColumn('roleUid')} from ${b.sqlName} ` +
      `where ${b.sqlColumn('identityUid')} = (select u from i)${dialect.lock('keyShare')}), ` +
      `r as (select ${uid}, ${caps} from ${r.sqlName} where ${bound} and not (${isBuiltIn.sql})${dialect.lock('share')}) ` +
      `select 2, ${uid}, null, ${caps} from r ` +
      `union all select 0, p, null, null from i ` +
      `union all select 1, ${b.sqlColumn('parentUid')}, ${b.sqlColumn('roleUid')}, null from b`;
  }

  /** The identity's grant rows, locked until sql's transaction ends; null when it does not exist. */
  async read(sql: Sql, subject: string): Promise<GrantRows | null> {
    const rows = await sql.values(this.text, [subject, this.builtInParam]);
    const found: GrantRows = { confinedTo: null, bindings: [], capabilities: new Map() };
    let identity = false;
    for (const [table, a, b, c] of rows as [number, string | null, string | null, unknown][]) {
      // A number on one engine, its text on another.
      if (Number(table) === 0) {
        identity = true;
        found.confinedTo = a;
      } else if (Number(table) === 1) {
        found.bindings.push({ parentUid: a!, roleUid: b! });
        const builtIn = this.builtIn.get(b!);
        if (builtIn) found.capabilities.set(b!, builtIn);
      } else found.capabilities.set(a!, ((typeof c === 'string' ? JSON.parse(c) : c) as string[] | null) ?? []);
    }
    return identity ? found : null;
  }
}
