// Transactions of our own, committed in groups. A commit is most of a small write's cost in SQLite (the WAL
// append), so writes that arrive while the connection is busy wait and then run together: one BEGIN IMMEDIATE,
// the writes one after the other, one COMMIT. A write that fails fails alone (see commit); every write of the
// group is answered only after the COMMIT, so nobody is told of a write that is not stored. Nothing else runs
// on the connection meanwhile (it is held from BEGIN to COMMIT), and BEGIN IMMEDIATE takes the file's write
// lock up front, waiting (without blocking the event loop) for another process (an import) rather than failing
// half-way.
import { together, withConnection, type ConnectionPool, type Sql, type StatementTimer } from './sql.js';

interface Write {
  fn: (sql: Sql) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Enough to amortize the commit; few enough that one group does not hold the connection for long. */
const maxGroup = 64;

/** What the store does at each transaction's start (after BEGIN IMMEDIATE) and end (after COMMIT or ROLLBACK). */
export interface TransactionHooks {
  began(sql: Sql): Promise<void>;
  ended(): void;
}

export class GroupCommit {
  private queue: Write[] = [];
  private running = false;

  constructor(
    private readonly pool: ConnectionPool,
    private readonly timer?: StatementTimer,
    private readonly hooks?: TransactionHooks,
  ) {}

  /** Writes waiting for the connection. */
  get depth(): number {
    return this.queue.length;
  }

  /** Runs fn in a transaction: all its statements are stored, or (when it throws) none is. */
  transaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (this.running) return;
      // The driver is synchronous, so a transaction started now would end before any other request is read:
      // the group would always be one. Started after the requests that arrived in this turn, it takes them all.
      this.running = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, maxGroup);
        try {
          await withConnection(this.pool, (sql) => this.commit(sql, group), this.timer);
        } catch (e) {
          for (const w of group) w.reject(e);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Runs the group and answers each write once the outcome of the whole is known. Writes rarely fail inside the
   * transaction (requests are validated before), so the group first runs without savepoints; if one write
   * fails, nothing is kept, that write gets its error, and the others run again, each in a savepoint.
   */
  private async commit(sql: Sql, group: Write[]): Promise<void> {
    const first = await this.attempt(sql, group, false);
    if ('failed' in first) {
      group[first.failed].reject(first.error);
      const rest = group.filter((_, i) => i !== first.failed);
      const again = await this.attempt(sql, rest, true);
      if ('outcomes' in again) answer(rest, again.outcomes);
      return;
    }
    answer(group, first.outcomes);
  }

  private async attempt(
    sql: Sql,
    group: Write[],
    savepoints: boolean,
  ): Promise<{ outcomes: Outcome[] } | { failed: number; error: unknown }> {
    await begin(sql);
    try {
      return await this.writes(sql, group, savepoints);
    } finally {
      this.hooks?.ended();
    }
  }

  private async writes(
    sql: Sql,
    group: Write[],
    savepoints: boolean,
  ): Promise<{ outcomes: Outcome[] } | { failed: number; error: unknown }> {
    const outcomes: Outcome[] = [];
    // Savepoints and releases are sent without waiting (the connection keeps their order); they are checked
    // before the commit.
    const unchecked: Promise<unknown>[] = [];
    const send = (statement: string) => {
      const sent = sql.run(statement);
      sent.catch(() => undefined);
      unchecked.push(sent);
    };
    try {
      await this.hooks?.began(sql);
      for (const [i, w] of group.entries()) {
        if (savepoints) send('savepoint write');
        try {
          outcomes.push({ ok: true, value: await w.fn(sql) });
        } catch (error) {
          if (!savepoints) {
            await sql.run('rollback');
            return { failed: i, error };
          }
          await sql.run('rollback to write');
          outcomes.push({ ok: false, error });
        }
        if (savepoints) send('release write');
      }
      await together(unchecked);
      await sql.run('commit');
    } catch (e) {
      // The transaction itself failed (the disk, say): nothing of the group is stored.
      await sql.run('rollback').catch(() => undefined);
      throw e;
    }
    return { outcomes };
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** How long a write waits for another process's transaction (an import) before it fails. */
const lockWaitMs = 10_000;
/** The longest pause between two tries: short, so a write gets in during the pauses between an import's steps. */
const maxRetryMs = 10;

/**
 * BEGIN IMMEDIATE, waiting for another process that holds the write lock. The driver is synchronous, so SQLite's
 * own busy wait would stall every request meanwhile: the connection has no busy timeout, and the wait is here.
 */
async function begin(sql: Sql): Promise<void> {
  const started = Date.now();
  for (let pause = 1; ; pause = Math.min(pause * 2, maxRetryMs)) {
    try {
      await sql.run('begin immediate');
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() - started > lockWaitMs) throw e;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

function answer(group: Write[], outcomes: Outcome[]): void {
  group.forEach((w, i) => {
    const o = outcomes[i];
    if (o.ok) w.resolve(o.value);
    else w.reject(o.error);
  });
}
