// Reads that must start after their caller asked (to see every write answered before), shared and spaced: while
// a read of a key runs, or less than gapMs after one started, those asking wait and share the one read that
// starts then. However many ask, at most one read of a key starts per gapMs: a flood of callers is not a flood
// of reads, and each caller still gets a read begun after it asked.
export class FreshReads<K, V> {
  /** per key, until its read has ended and gapMs have passed since it started */
  private readonly busy = new Map<K, Promise<unknown>>();
  private readonly waiting = new Map<K, Promise<V>>();

  constructor(private readonly gapMs: number) {}

  read(key: K, read: () => Promise<V>): Promise<V> {
    const waiting = this.waiting.get(key);
    if (waiting) return waiting;
    const start = (): Promise<V> => {
      this.waiting.delete(key);
      const reading = read();
      const spaced = new Promise((resolve) => setTimeout(resolve, this.gapMs).unref());
      const busy: Promise<unknown> = Promise.allSettled([reading, spaced]).then(() => {
        if (this.busy.get(key) === busy) this.busy.delete(key);
      });
      this.busy.set(key, busy);
      return reading;
    };
    const busy = this.busy.get(key);
    if (!busy) return start();
    const next = busy.then(start);
    this.waiting.set(key, next);
    return next;
  }
}
