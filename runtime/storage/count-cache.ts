// Counts of large result sets, kept until the database changes. A list's totalCount is a count over its whole
// scope: at 100,000 rows it costs more than the page itself, on every page. SQLite's data_version, read on the
// same connection as the count, changes whenever another connection commits (our writer, an import in another
// process), so a kept count is used only while nothing at all has been written since it was taken.
import { createHash } from 'node:crypto';
import type { Sql } from './sql.js';

/** Below this, counting again costs about what checking the version does. */
const worthKeeping = 1000;
const maxKept = 256;

interface Kept {
  n: number;
  /** undefined: the count was large, but taken without a version; the next count of the query takes one */
  version?: number;
}

export class CountCache {
  private readonly kept = new Map<string, Kept>();

  /** The count of the query named by key: from `count`, or kept from an earlier count if nothing changed since. */
  async count(read: Sql, query: string, count: () => Promise<number>): Promise<number> {
    // Kept by a digest: the query's text holds its values, up to a list parameter's 1,000.
    const key = createHash('sha256').update(query).digest('base64');
    const known = this.kept.get(key);
    if (!known) {
      const n = await count();
      if (n >= worthKeeping) this.keep(key, { n });
      return n;
    }
    // The version is read before counting: a change in between makes the kept count look old, never new.
    const [{ data_version: version }] = await read.all('pragma data_version');
    if (known.version === version) return known.n;
    const n = await count();
    this.kept.delete(key);
    if (n >= worthKeeping) this.keep(key, { n, version: version as number });
    return n;
  }

  private keep(key: string, kept: Kept): void {
    if (this.kept.size >= maxKept) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(key, kept);
  }
}
