// Whether rows read a moment ago are still the rows stored, without reading them again (SQLite). One connection
// writes, and a write transaction holds the file's write lock from BEGIN IMMEDIATE: temporary triggers on that
// connection count every row it writes to the watched tables (committed or not), and `pragma data_version`, read
// at each BEGIN, moves when another process (an import, a command) has committed anything since. A mark taken
// before a read and found unchanged inside a later write transaction means no watched row has changed in
// between, and none can until that transaction ends. A write's check of the caller's grants uses it
// (runtime/access/authorization.ts): the grants it cached are the grants stored, so it need not read them again.
import type { TransactionHooks } from './group-commit.js';
import type { Sql } from './sql.js';

/** The better-sqlite3 connection, as far as the mark needs it: a function its triggers call. */
interface WritingConnection {
  function(name: string, options: { deterministic: boolean }, fn: () => null): unknown;
}

const written = 'change_mark_written';

export class ChangeMark implements TransactionHooks {
  /** rows of the watched tables written on the writing connection */
  private rowsWritten = 0;
  /** BEGINs that found another connection had committed since the one before */
  private othersCommitted = 0;
  private dataVersion?: number;
  /** a transaction is open that wrote watched rows: readers do not see them yet */
  private uncommitted = false;
  private readonly watched = new Set<string>();
  private ready = false;

  constructor(
    connection: WritingConnection,
    private readonly transaction: (fn: (sql: Sql) => Promise<void>) => Promise<void>,
  ) {
    connection.function(written, { deterministic: false }, () => {
      this.rowsWritten++;
      this.uncommitted = true;
      return null;
    });
  }

  /**
   * The mark over these tables: a number that moves whenever one of their rows may have changed; NaN while a
   * transaction holds uncommitted changes to them, and until the triggers are in place (NaN equals nothing).
   */
  over(tables: string[]): () => number {
    const added = tables.filter((t) => !this.watched.has(t));
    for (const t of added) this.watched.add(t);
    if (added.length > 0) {
      this.ready = false;
      void this.transaction(async (sql) => {
        for (const table of added)
          for (const event of ['insert', 'update', 'delete'])
            await sql.run(
              `create temp trigger if not exists "${written}_${table}_${event}" after ${event} on main."${table}" ` +
                `begin select ${written}(); end`,
            );
      }).then(
        () => (this.ready = true),
        // Not in place (the file busy past the wait): the mark stays NaN, and grants are read as before.
        () => undefined,
      );
    }
    return () => (this.ready && !this.uncommitted ? this.rowsWritten + this.othersCommitted : NaN);
  }

  async began(sql: Sql): Promise<void> {
    const [[version, triggers]] = (await sql.values(
      `select data_version, (select count(*) from temp.sqlite_master where type = 'trigger' and name like '${written}%') ` +
        'from pragma_data_version',
    )) as [[number, number]];
    // Triggers gone (the connection replaced): the mark no longer sees this process's writes, so it says nothing.
    if (this.ready && triggers !== this.watched.size * 3) this.ready = false;
    if (version === this.dataVersion) return;
    this.dataVersion = version;
    this.othersCommitted++;
  }

  ended(): void {
    this.uncommitted = false;
  }
}
