// runtime/operate/metric-series.ts: counters and histograms as the Prometheus text format writes them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CounterFamily, HistogramFamily } from '../runtime/operate/metric-series.js';

test('a counter family: one line per label set, label values quoted and escaped, in the names given', () => {
  const c = new CounterFamily('things_total', 'Things, by kind and code', ['kind', 'code']);
  c.at(['a', 200]).inc();
  c.at(['a', 200]).inc(2);
  c.at(['say "hi"\\\n', 404]).inc();
  assert.is(
    c.render(),
    [
      '# HELP things_total Things, by kind and code',
      '# TYPE things_total counter',
      'things_total{kind="a",code="200"} 3',
      'things_total{kind="say \\"hi\\"\\\\\\n",code="404"} 1',
      '',
    ].join('\n'),
  );
});

test('label values that join alike are still different series', () => {
  const c = new CounterFamily('pairs_total', 'Pairs', ['left', 'right']);
  c.at(['a b', 'c']).inc();
  c.at(['a', 'b c']).inc();
  assert.match(c.render(), /pairs_total\{left="a b",right="c"\} 1\npairs_total\{left="a",right="b c"\} 1/);
});

test('a histogram: buckets cumulative, a value on a bound counted in it, +Inf, sum and count', () => {
  const h = new HistogramFamily('wait_seconds', 'Waits', ['kind'], [0.1, 1]);
  for (const v of [0.05, 0.1, 0.5, 3]) h.at(['read']).observe(v);
  assert.is(
    h.render(),
    [
      '# HELP wait_seconds Waits',
      '# TYPE wait_seconds histogram',
      'wait_seconds_bucket{kind="read",le="0.1"} 2',
      'wait_seconds_bucket{kind="read",le="1"} 3',
      'wait_seconds_bucket{kind="read",le="+Inf"} 4',
      'wait_seconds_sum{kind="read"} 3.65',
      'wait_seconds_count{kind="read"} 4',
      '',
    ].join('\n'),
  );
});

test('a family nothing was counted in has its help and type only', () => {
  assert.is(
    new CounterFamily('none_total', 'None', ['x']).render(),
    '# HELP none_total None\n# TYPE none_total counter\n',
  );
});

test.run();
