/**
 * Metrics at a glance: commands/s, events appended/s and the p99 latency of `POST /commands`
 * between consecutive polls of `/status` (status-history.ts), drawn as sparklines over the last
 * two minutes, with the gateway's own figures beside them, and the configuration generation with
 * the last reload's outcome.
 */
import type { StatusHistory } from '../status-history.ts';
import { ErrorNote, PageHeading, Sparkline } from '../ui.tsx';

export function MetricsPage({ status }: { status: StatusHistory }) {
  const { latest, points, error } = status;
  const perSecond = (v: number | null): string => (v === null ? '—' : `${v.toFixed(1)}/s`);
  const ms = (v: number | null): string => (v === null ? '—' : `${(v * 1000).toFixed(1)} ms`);
  return (
    <section>
      <PageHeading>Metrics</PageHeading>
      <ErrorNote error={error} />
      <div class="sparks">
        <Sparkline label="Commands" values={points.map((p) => p.commandsPerSecond)} format={perSecond} />
        <Sparkline label="Events appended" values={points.map((p) => p.eventsPerSecond)} format={perSecond} />
        <Sparkline label="p99 of POST /commands" values={points.map((p) => p.p99Seconds)} format={ms} />
      </div>
      {latest && (
        <dl class="facts">
          <dt>Version</dt><dd>{latest.gateway.version}</dd>
          <dt>Storage</dt><dd>{latest.gateway.storage}</dd>
          <dt>Up for</dt><dd>{latest.gateway.uptimeSeconds} s</dd>
          <dt>Commands accepted</dt><dd>{latest.counters.commandsAccepted}</dd>
          <dt>Events appended</dt><dd>{latest.counters.eventsAppended}</dd>
          <dt>Webhook deliveries</dt><dd>{Object.entries(latest.webhooks.deliveries).map(([s, n]) => `${s} ${n}`).join(' · ')}</dd>
          <dt>HTTP requests</dt><dd>{latest.counters.httpRequests}</dd>
          {latest.config && (
            <>
              <dt>Configuration</dt><dd data-field="config-generation">{latest.config.generation.hash} · loaded {latest.config.generation.loadedAt}</dd>
              <dt>Last reload</dt>
              <dd data-field="last-reload">{latest.config.lastReload ? `${latest.config.lastReload.outcome} (${latest.config.lastReload.trigger}, ${latest.config.lastReload.at})` : 'none since start'}</dd>
              {latest.config.needsRestart.length > 0 && <><dt>Needs a restart</dt><dd data-field="needs-restart">{latest.config.needsRestart.join(', ')}</dd></>}
            </>
          )}
        </dl>
      )}
    </section>
  );
}
