/**
 * Label sets cached for the metrics every command touches. prom-client validates and hashes the
 * label object on every call (about 0.2 µs per counter increment and 0.6 µs per histogram
 * observation here; a command makes five such calls), also through `labels()`. A hot metric finds
 * the label set's entry by one `Map` lookup on a key the caller builds from the label values, and
 * counts into the very entry prom-client exposes at scrape time.
 *
 * The entries are prom-client's own (15.x, `lib/counter.js` and `lib/histogram.js`: `hashMap`,
 * `upperBounds`): a label set's first count goes through the public `inc` or `observe`, which makes
 * its entry (or finds one made before), then the entry is picked out of `hashMap` by its label
 * values. A `reset()` replaces `hashMap` and is noticed; a `remove()` of a hot label set is not (no
 * caller removes one). `test/metrics/hot.test.ts` holds
 * the exposition equal to plain prom-client's.
 */
import type { Counter, Histogram, LabelValues } from 'prom-client';

interface CounterEntry {
  value: number;
  labels: object;
}

interface HistogramEntry {
  labels: object;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/** prom-client's per-label-set state of a metric. */
interface Internals<E> {
  hashMap: Record<string, E>;
}

/** A counter's label sets by key: `inc(key, labels)` counts one for the label set `key` names. */
export class HotCounter<T extends string> {
  readonly #counter: Counter<T>;
  #entries = new Map<string, CounterEntry>();
  #map: Record<string, CounterEntry> | undefined;

  constructor(counter: Counter<T>) {
    this.#counter = counter;
  }

  /** Adds `by` (default 1) to the label set `key` names; `labels` makes it the first time (or after a reset). */
  inc(key: string, labels: () => LabelValues<T>, by = 1): void {
    const map = (this.#counter as unknown as Internals<CounterEntry>).hashMap;
    if (map !== this.#map) this.#reset(map);
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      entry.value += by;
      return;
    }
    const made = labels();
    this.#counter.inc(made, by);
    this.#entries.set(key, entryOf(map, made));
  }

  #reset(map: Record<string, CounterEntry>): void {
    this.#entries = new Map();
    this.#map = map;
  }
}

/** A histogram's label sets by key: `observe(key, labels, value)` records `value` for the label set `key` names. */
export class HotHistogram<T extends string> {
  readonly #histogram: Histogram<T>;
  readonly #bounds: readonly number[];
  /** The bounds as the property names of `bucketValues` (a number as a key is made a string on every use). */
  readonly #names: readonly string[];
  #entries = new Map<string, HistogramEntry>();
  #map: Record<string, HistogramEntry> | undefined;

  constructor(histogram: Histogram<T>) {
    this.#histogram = histogram;
    this.#bounds = (histogram as unknown as { upperBounds: number[] }).upperBounds;
    this.#names = this.#bounds.map(String);
  }

  /** Records `value` for the label set `key` names; `labels` makes it the first time (or after a reset). */
  observe(key: string, labels: () => LabelValues<T>, value: number): void {
    if (!Number.isFinite(value)) return;
    const map = (this.#histogram as unknown as Internals<HistogramEntry>).hashMap;
    if (map !== this.#map) this.#reset(map);
    const entry = this.#entries.get(key);
    if (entry === undefined) {
      const made = labels();
      this.#histogram.observe(made, value);
      this.#entries.set(key, entryOf(map, made));
      return;
    }
    const bounds = this.#bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        entry.bucketValues[this.#names[i]] += 1;
        break;
      }
    }
    entry.sum += value;
    entry.count += 1;
  }

  #reset(map: Record<string, HistogramEntry>): void {
    this.#entries = new Map();
    this.#map = map;
  }
}

/** The entry of `hashMap` whose labels have the values of `labels`. */
function entryOf<E extends { labels: object }>(map: Record<string, E>, labels: object): E {
  const wanted = Object.entries(labels);
  const entry = Object.values(map).find((candidate) => {
    const has = candidate.labels as Record<string, unknown>;
    return Object.keys(has).length === wanted.length && wanted.every(([name, value]) => has[name] === value);
  });
  if (entry === undefined) throw new Error('prom-client did not make the label set: its internals changed');
  return entry;
}
