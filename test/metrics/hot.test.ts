import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from '../../src/metrics/hot.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** A plain prom-client counter and histogram, and the same pair counted through the hot wrappers, each in a registry of its own. */
function pair() {
  const plain = new Registry();
  const hot = new Registry();
  const make = (registry: Registry) => ({
    counter: new Counter({ name: 'test_total', help: 'h', labelNames: ['a', 'b'], registers: [registry] }),
    histogram: new Histogram({ name: 'test_seconds', help: 'h', labelNames: ['a', 'b'], buckets: BUCKETS, registers: [registry] }),
  });
  const p = make(plain);
  const h = make(hot);
  return { plain, hot, p, h, hotCounter: new HotCounter(h.counter), hotHistogram: new HotHistogram(h.histogram) };
}

const labelValue = fc.constantFrom('x', 'y', 'z z');
const observation = fc.record({ a: labelValue, b: labelValue, value: fc.oneof(fc.constantFrom(0, 0.001, 0.01, 0.1, 1, 5), fc.double({ min: 0, max: 3, noNaN: true })) });

describe('hot metrics: label sets found by key, counted into prom-client\'s own entries', () => {
  it('expose exactly what plain prom-client exposes for the same calls', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (calls) => {
        const { plain, hot, p, hotCounter, hotHistogram } = pair();
        for (const { a, b, value } of calls) {
          p.counter.inc({ a, b });
          p.histogram.observe({ a, b }, value);
          hotCounter.inc(`${a}\0${b}`, () => ({ a, b }));
          hotHistogram.observe(`${a}\0${b}`, () => ({ a, b }), value);
        }
        expect(await hot.metrics()).toBe(await plain.metrics());
      }),
      { numRuns: 200 },
    );
  });

  it('keep what plain calls counted before the first hot call, and start again after a reset', async () => {
    const { hot, h, hotCounter, hotHistogram } = pair();
    h.counter.inc({ a: 'x', b: 'y' }, 2);
    h.histogram.observe({ a: 'x', b: 'y' }, 0.5);
    hotCounter.inc('x\0y', () => ({ a: 'x', b: 'y' }));
    hotHistogram.observe('x\0y', () => ({ a: 'x', b: 'y' }), 0.005);
    expect(await hot.metrics()).toContain('test_total{a="x",b="y"} 3');
    expect(await hot.metrics()).toContain('test_seconds_count{a="x",b="y"} 2');
    h.counter.reset();
    h.histogram.reset();
    hotCounter.inc('x\0y', () => ({ a: 'x', b: 'y' }));
    hotHistogram.observe('x\0y', () => ({ a: 'x', b: 'y' }), 0.005);
    expect(await hot.metrics()).toContain('test_total{a="x",b="y"} 1');
    expect(await hot.metrics()).toContain('test_seconds_count{a="x",b="y"} 1');
    expect(await hot.metrics()).toContain('test_seconds_bucket{le="0.01",a="x",b="y"} 1');
  });
});
