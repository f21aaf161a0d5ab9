// Counters and histograms on the request path, kept as plain numbers and written in the Prometheus text format
// at each scrape. prom-client hashes and validates a series' labels at every inc and observe, even through
// labels(): about 8 µs of a 50 µs get went to the three series a request touches. Here a series is found by
// one map lookup and then costs a few additions.

/** One series' label values, in the order of its family's label names. */
export type LabelValues = readonly (string | number)[];

/** A label value as the text format quotes it. */
function quoted(value: string | number): string {
  return `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

abstract class Family<S> {
  private readonly kept = new Map<string, { labels: string; series: S }>();

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly type: 'counter' | 'histogram',
  ) {}

  protected abstract make(): S;
  protected abstract lines(labels: string, series: S): string[];

  /** The series of these label values, made at its first use. */
  at(values: LabelValues): S {
    const key = values.length === 1 ? String(values[0]) : values.join('\u0000');
    let found = this.kept.get(key);
    if (found === undefined) {
      const labels = this.labelNames.map((name, i) => `${name}=${quoted(values[i])}`).join(',');
      this.kept.set(key, (found = { labels, series: this.make() }));
    }
    return found.series;
  }

  /** The family in the text format: its help, its type and each series. */
  render(): string {
    const out = [`# HELP ${this.name} ${this.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`];
    out.push(`# TYPE ${this.name} ${this.type}`);
    for (const { labels, series } of this.kept.values()) out.push(...this.lines(labels, series));
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
