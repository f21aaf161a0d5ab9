// Counters and histograms on the request path, kept as plain numbers and written in the Prometheus text format
// at each scrape. prom-client hashes and validates a series' labels at every inc and observe, even through
// labels(): about 8 µs of a 50 µs get went to the three series a request touches. Here a series is found by a
// map lookup per label and then costs a few additions.

/** One series' label values, in the order of its family's label names. */
export type LabelValues = readonly (string | number)[];

/** A label value as the text format quotes it. */
function quoted(value: string | number): string {
  return `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** One level of the lookup: a label value to the next level, or to the series at the last label. */
type Level<S> = Map<string | number, Level<S> | Kept<S>>;
interface Kept<S> {
  labels: string;
  series: S;
}

abstract class Family<S> {
  /** by each label value in turn: no key is built and no new string hashed per lookup */
  private readonly root: Level<S> = new Map();
  private readonly kept: Kept<S>[] = [];

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly type: 'counter' | 'histogram',
  ) {}

  protected abstract make(): S;
  protected abstract lines(labels: string, series: S): string[];

  /** The series of these label values (compared as given: 200 and '200' are two), made at its first use. */
  at(values: LabelValues): S {
    let level = this.root;
    for (let i = 0; i < values.length - 1; i++) {
      let next = level.get(values[i]) as Level<S> | undefined;
      if (next === undefined) level.set(values[i], (next = new Map()));
      level = next;
    }
    const last = values.length === 0 ? '' : values[values.length - 1];
    let found = level.get(last) as Kept<S> | undefined;
    if (found === undefined) {
      const labels = this.labelNames.map((name, i) => `${name}=${quoted(values[i])}`).join(',');
      found = { labels, series: this.make() };
      level.set(last, found);
      this.kept.push(found);
    }
    return found.series;
  }

  /** The family in the text format: its help, its type and each series. */
  render(): string {
    const out = [`# HELP ${this.name} ${this.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`];
    out.push(`# TYPE ${this.name} ${this.type}`);
    for (const { labels, series } of this.kept) out.push(...this.lines(labels, series));
    return `${out.join('\n')}\n`;
  }
}

export class CounterSeries {
  value = 0;
  inc(n = 1): void {
    this.value += n;
  }
}

export class CounterFamily extends Family<CounterSeries> {
  constructor(name: string, help: string, labelNames: readonly string[]) {
    super(name, help, labelNames, 'counter');
  }
  protected make(): CounterSeries {
    return new CounterSeries();
  }
  protected lines(labels: string, s: CounterSeries): string[] {
    return [`${this.name}${labels ? `{${labels}}` : ''} ${s.value}`];
  }
}

export class HistogramSeries {
  /** observations per bucket, not cumulative; the last is above every bound */
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }
  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

export class HistogramFamily extends Family<HistogramSeries> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames, 'histogram');
  }
  protected make(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }
  protected lines(labels: string, s: HistogramSeries): string[] {
    const own = labels ? `${labels},` : '';
    const out: string[] = [];
    let below = 0;
    this.bounds.forEach((bound, i) => {
      below += s.counts[i];
      out.push(`${this.name}_bucket{${own}le="${bound}"} ${below}`);
    });
    out.push(`${this.name}_bucket{${own}le="+Inf"} ${s.count}`);
    const braces = labels ? `{${labels}}` : '';
    out.push(`${this.name}_sum${braces} ${s.sum}`, `${this.name}_count${braces} ${s.count}`);
    return out;
  }
}
