/**
 * Rates from the gateway's cumulative counters (`GET /status`): two samples taken a few seconds
 * apart give commands/s, events/s and the p99 latency of `POST /commands` over that interval (from
 * the histogram's bucket deltas, interpolated inside the bucket as Prometheus' `histogram_quantile`
 * does). Pure, unit tested in test/console/rates.test.ts.
 */

/** A cumulative histogram bucket: upper bound (seconds, or `+Inf`) and the count of observations up to it. */
export type Bucket = [le: number | '+Inf', cumulativeCount: number];

/** One poll of `/status`, as far as the rates read it. */
export interface StatusSample {
  /** When it was taken, epoch ms. */
  atMs: number;
  counters: { commandsAccepted: number; eventsAppended: number };
  commandLatency: { buckets: Bucket[]; count: number; sum: number };
}

/** The rates over the interval between two samples. */
export interface RatePoint {
  commandsPerSecond: number;
  eventsPerSecond: number;
  /** p99 of command latency in seconds; null when no command was accepted in the interval. */
  p99Seconds: number | null;
}

/** Rates between `previous` and `next` (a counter that went down, after a restart, counts from zero). */
export function rateBetween(previous: StatusSample, next: StatusSample): RatePoint {
  const seconds = Math.max((next.atMs - previous.atMs) / 1000, 1e-3);
  const delta = (a: number, b: number): number => (b >= a ? b - a : b);
  return {
    commandsPerSecond: delta(previous.counters.commandsAccepted, next.counters.commandsAccepted) / seconds,
    eventsPerSecond: delta(previous.counters.eventsAppended, next.counters.eventsAppended) / seconds,
    p99Seconds: quantileBetween(0.99, previous.commandLatency.buckets, next.commandLatency.buckets),
  };
}

/** The `q` quantile of the observations made between two snapshots of one histogram; null when there were none. */
export function quantileBetween(q: number, previous: Bucket[], next: Bucket[]): number | null {
  const before = new Map(previous.map(([le, count]) => [String(le), count]));
  const deltas = next.map(([le, count]): Bucket => [le, Math.max(0, count - (before.get(String(le)) ?? 0))]);
  const total = deltas.at(-1)?.[1] ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, count] of deltas) {
    if (count >= rank) {
      // Beyond the last finite bound nothing is known but that bound.
      if (le === '+Inf') return lower;
      return count === below ? le : lower + ((le - lower) * (rank - below)) / (count - below);
    }
    if (le !== '+Inf') lower = le;
    below = count;
  }
  return lower;
}

/** The `points` attribute of an SVG polyline drawing `values` into `width`×`height` (gaps as zero; scaled to the largest value; one value is a level line). */
export function sparklinePoints(series: Array<number | null>, width: number, height: number): string {
  if (series.length === 0) return '';
  const values = series.length === 1 ? [series[0], series[0]] : series;
  const max = Math.max(...values.map((v) => v ?? 0));
  const step = width / (values.length - 1);
  const y = (v: number | null): number => (max > 0 ? height - ((v ?? 0) / max) * height : height);
  return values.map((v, i) => `${round(i * step)},${round(y(v))}`).join(' ');
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
