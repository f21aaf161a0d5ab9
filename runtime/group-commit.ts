// Transactions of our own, committed in groups. A commit is most of a small write's cost in SQLite (the WAL
// append), so writes that arrive while the connection is busy wait and then run together: one BEGIN IMMEDIATE,
// each write in a savepoint of its own, one COMMIT. A write that fails rolls back to its savepoint and fails
// alone; every write of the group is answered only after the COMMIT, so nobody is told of a write that is not
// stored. Nothing else runs on the connection meanwhile (it is held from BEGIN to COMMIT), and BEGIN IMMEDIATE
// takes the file's write lock up front, waiting for another process (an import) rather than failing half-way.
import { together, withConnection, type ConnectionPool, type Sql } from './sql.js';

interface Write {
  fn: (sql: Sql) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Enough to amortize the commit; few enough that one group does not hold the connection for long. */
const maxGroup = 64;

export class GroupCommit {
  private queue: Write[] = [];
  private running = false;

  constructor(private readonly pool: ConnectionPool) {}

  /** Runs fn in a transaction: all its statements are stored, or (when it throws) none is. */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, maxGroup);
        try {
          await withConnection(this.pool, (sql) => this.commit(sql, group));
        } catch (e) {
          for (const w of group) w.reject(e);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** Runs the group; answers each write once the outcome of the whole is known. */
  private async commit(sql: Sql, group: Write[]): Promise<void> {
    await sql.run('begin immediate');
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    // Savepoints and releases are sent without waiting (the connection keeps their order); they are checked
    // before the commit.
    const unchecked: Promise<unknown>[] = [];
    const send = (statement: string) => {
      const sent = sql.run(statement);
      sent.catch(() => undefined);
      unchecked.push(sent);
    };
    try {
      for (const w of group) {
        send('savepoint write');
        try {
          outcomes.push({ ok: true, value: await w.fn(sql) });
        } catch (error) {
          await sql.run('rollback to write');
          outcomes.push({ ok: false, error });
        }
        send('release write');
      }
      await together(unchecked);
      await sql.run('commit');
    } catch (e) {
      // The transaction itself failed (the disk, say): nothing of the group is stored.
      await sql.run('rollback').catch(() => undefined);
      throw e;
    }
    group.forEach((w, i) => {
      const o = outcomes[i];
      if (o.ok) w.resolve(o.value);
      else w.reject(o.error);
    });
  }
}
