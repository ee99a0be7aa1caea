/**
 * Metrics at a glance: `GET /status` polled every 2 seconds; commands/s, events/s and the p99
 * latency of `POST /commands` between consecutive polls (rates.ts), drawn as sparklines over the
 * last two minutes, with the gateway's own figures beside them.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { rateBetween, type RatePoint } from '../rates.ts';
import type { GatewayStatus } from '../types.ts';
import { ErrorNote, PageHeading, POLL_MS, Sparkline } from '../ui.tsx';

/** Points kept: two minutes at one poll every 2 s. */
const HISTORY = 60;

export function MetricsPage({ api }: { api: Api }) {
  const [latest, setLatest] = useState<GatewayStatus>();
  const [points, setPoints] = useState<RatePoint[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let previous: (GatewayStatus & { atMs: number }) | undefined;
    const poll = async (): Promise<void> => {
      try {
        const sample = { ...(await api.get<GatewayStatus>('status')), atMs: Date.now() };
        if (previous) {
          const point = rateBetween(previous, sample);
          setPoints((list) => [...list, point].slice(-HISTORY));
        }
        previous = sample;
        setLatest(sample);
        setError(undefined);
      } catch (err) {
        setError(err);
      }
    };
    void poll();
    const timer = setInterval(() => void poll(), POLL_MS);
    return () => clearInterval(timer);
  }, [api.config]);
  const perSecond = (v: number | null): string => (v === null ? '—' : `${v.toFixed(1)}/s`);
  const ms = (v: number | null): string => (v === null ? '—' : `${(v * 1000).toFixed(1)} ms`);
  return (
    <section>
      <PageHeading>Metrics</PageHeading>
      <ErrorNote error={error} />
      <div class="sparks">
        <Sparkline label="Commands" values={points.map((p) => p.commandsPerSecond)} format={perSecond} />
        <Sparkline label="Events ingested" values={points.map((p) => p.eventsPerSecond)} format={perSecond} />
        <Sparkline label="p99 of POST /commands" values={points.map((p) => p.p99Seconds)} format={ms} />
      </div>
      {latest && (
        <dl class="facts">
          <dt>Version</dt><dd>{latest.gateway.version}</dd>
          <dt>Storage</dt><dd>{latest.gateway.storage}</dd>
          <dt>Up for</dt><dd>{Math.round(latest.gateway.uptimeSeconds)} s</dd>
          <dt>Commands accepted</dt><dd>{latest.counters.commandsAccepted}</dd>
          <dt>Events ingested</dt><dd>{latest.counters.eventsIngested}</dd>
          <dt>Webhook deliveries</dt><dd>{Object.entries(latest.webhooks.deliveries).map(([s, n]) => `${s} ${n}`).join(' · ')}</dd>
          <dt>HTTP requests</dt><dd>{latest.counters.httpRequests}</dd>
        </dl>
      )}
    </section>
  );
}
