/**
 * Webhooks: the signed-in caller's subscriptions, each with its health (disabled, failing streak),
 * its recent deliveries (status, attempts, last answer) and its dead letters, and the operations
 * (write scope): re-deliver a dead letter (`…/deliveries/{id}/retry`), resend an event
 * (`…/events/{eventId}/resend`), enable a disabled subscription (`…/enable`, optionally recovering
 * what it missed), recover a time range (`…/recover`, its progress polled from
 * `…/recoveries/{rid}`) and rotate the secret (`…/secret/rotate`, a generated one shown once).
 */
import { useRef, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import type { Delivery, Recovery, Subscription } from '../types.ts';
import { ErrorNote, PageHeading, usePoll } from '../ui.tsx';

/** Deliveries shown per subscription. */
const RECENT = 50;
/** Page size when walking to the newest deliveries (the endpoint's ceiling), and pages read per poll at most. */
const PAGE = 1000;
const MAX_PAGES = 3;

type DeliveryPage = { deliveries: Delivery[]; nextCursor?: string };

/**
 * The newest `RECENT` deliveries, newest first. The list is in enqueue order from a cursor, so it is
 * walked page by page; `skip` remembers where a long list's last page began, so later polls start
 * there instead of at the beginning (enqueue order only grows).
 */
async function newestDeliveries(api: Api, path: string, skip: { cursor?: string }): Promise<Delivery[]> {
  let newest: Delivery[] = [];
  let after = skip.cursor;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const { deliveries, nextCursor } = await api.get<DeliveryPage>(path, { limit: String(PAGE), after });
    newest = [...newest, ...deliveries].slice(-RECENT);
    if (nextCursor === undefined) break;
    if (deliveries.length >= RECENT) skip.cursor = after;
    after = nextCursor;
  }
  return newest.reverse();
}

export function WebhooksPage({ api }: { api: Api }) {
  const subscriptions = usePoll(() => api.get<{ subscriptions: Subscription[] }>('subscriptions'));
  const list = subscriptions.data?.subscriptions ?? [];
  return (
    <section>
      <PageHeading>Webhooks</PageHeading>
      <ErrorNote error={subscriptions.error} />
      {subscriptions.data && list.length === 0 && <p class="hint">This key has no webhook subscriptions.</p>}
      {list.map((s) => <SubscriptionPanel key={s.id} api={api} subscription={s} onChange={subscriptions.refresh} />)}
    </section>
  );
}

/** Runs one operation: its error (if any) shown in the panel, then the panel refreshed. */
function useOperation(refresh: () => Promise<unknown>) {
  const [error, setError] = useState<unknown>();
  const run = async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    try {
      const result = await work();
      setError(undefined);
      return result;
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      await refresh();
    }
  };
  return { error, run };
}

function SubscriptionPanel({ api, subscription, onChange }: { api: Api; subscription: Subscription; onChange: () => Promise<void> }) {
  const base = `subscriptions/${encodeURIComponent(subscription.id)}`;
  const path = `${base}/deliveries`;
  const skip = useRef<{ cursor?: string }>({});
  const recent = usePoll(() => newestDeliveries(api, path, skip.current));
  const dead = usePoll(() => api.get<DeliveryPage>(path, { status: 'dead', limit: String(RECENT) }));
  const refresh = () => Promise.all([recent.refresh(), dead.refresh(), onChange()]);
  const operation = useOperation(refresh);
  const retry = (delivery: Delivery) => operation.run(() => api.post(`${path}/${encodeURIComponent(delivery.id)}/retry`));
  const resend = (delivery: Delivery) => operation.run(() => api.post(`${base}/events/${encodeURIComponent(delivery.eventId)}/resend`));
  const titleId = `subscription-${subscription.id}`;
  return (
    <article class="panel" aria-labelledby={titleId} data-subscription={subscription.id}>
      <h2 id={titleId}>{subscription.webhook.url}</h2>
      <p class="sub">
        {subscription.id} · <span data-field="subscription-status">{subscription.status}</span>
        {subscription.disabledReason ? ` (${subscription.disabledReason === 'gone' ? 'the receiver answered 410 Gone' : 'failing too long'} since ${new Date(subscription.disabledAt!).toLocaleString()})` : ''}
        {subscription.serviceId ? ` · service ${subscription.serviceId}` : ''}
        {subscription.filter ? ` · types ${subscription.filter.types.join(', ')}` : ' · every event'}
        {subscription.failing ? ` · failing: ${subscription.failing.failures} attempts since ${new Date(subscription.failing.since).toLocaleString()}` : ''}
        {subscription.previousSecretExpiresAt ? ` · old secret signs until ${new Date(subscription.previousSecretExpiresAt).toLocaleString()}` : ''}
      </p>
      <ErrorNote error={recent.error ?? dead.error} />
      <ErrorNote error={operation.error} />
      <Operations api={api} base={base} subscription={subscription} run={operation.run} />
      <h3>Dead letters</h3>
      {(dead.data?.deliveries.length ?? 0) === 0 ? <p class="hint">None.</p> : <DeliveryTable caption="Deliveries that gave up" deliveries={dead.data?.deliveries ?? []} action={{ label: 'Re-deliver', run: retry }} />}
      <h3>Recent deliveries</h3>
      <DeliveryTable caption={`The newest ${RECENT} at most, newest first`} deliveries={recent.data ?? []} action={{ label: 'Resend', run: resend }} />
    </article>
  );
}

type Run = <T>(work: () => Promise<T>) => Promise<T | undefined>;

/** Enable, recover a time range, rotate the secret. */
function Operations({ api, base, subscription, run }: { api: Api; base: string; subscription: Subscription; run: Run }) {
  const [recoverMissed, setRecoverMissed] = useState(true);
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const [overlap, setOverlap] = useState('24h');
  const [recoveryId, setRecoveryId] = useState<string>();
  const [secret, setSecret] = useState<string>();
  const label = subscription.webhook.url;
  const enable = async () => {
    const answer = await run(() => api.post<Subscription & { recovery?: Recovery }>(`${base}/enable`, { recover: recoverMissed }));
    if (answer?.recovery) setRecoveryId(answer.recovery.id);
  };
  const recover = async (event: Event) => {
    event.preventDefault();
    const body: Record<string, string> = { since: new Date(since).toISOString() };
    if (until) body.until = new Date(until).toISOString();
    const answer = await run(() => api.post<Recovery>(`${base}/recover`, body));
    if (answer) setRecoveryId(answer.id);
  };
  const rotate = async (event: Event) => {
    event.preventDefault();
    const answer = await run(() => api.post<{ secret?: string }>(`${base}/secret/rotate`, { overlap }));
    if (answer) setSecret(answer.secret);
  };
  return (
    <div class="operations">
      {subscription.status === 'disabled' && (
        <p>
          <label><input type="checkbox" checked={recoverMissed} onChange={(e) => setRecoverMissed((e.target as HTMLInputElement).checked)} /> also recover the events it missed</label>{' '}
          <button type="button" onClick={() => void enable()} aria-label={`Enable ${label}`}>Enable</button>
        </p>
      )}
      <form onSubmit={(e) => void recover(e)} aria-label={`Recover a time range for ${label}`}>
        <label>Recover from <input type="datetime-local" required value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} /></label>{' '}
        <label>until <input type="datetime-local" value={until} onInput={(e) => setUntil((e.target as HTMLInputElement).value)} placeholder="now" /></label>{' '}
        <button type="submit">Recover</button>
      </form>
      {recoveryId && <RecoveryProgress api={api} path={`${base}/recoveries/${encodeURIComponent(recoveryId)}`} />}
      <form onSubmit={(e) => void rotate(e)} aria-label={`Rotate the secret of ${label}`}>
        <label>Old secret still signs for <input size={6} value={overlap} onInput={(e) => setOverlap((e.target as HTMLInputElement).value)} /></label>{' '}
        <button type="submit">Rotate secret</button>
      </form>
      {secret && (
        <p class="secret" role="status">
          New secret (shown this once): <code data-field="new-secret">{secret}</code>
        </p>
      )}
    </div>
  );
}

function RecoveryProgress({ api, path }: { api: Api; path: string }) {
  const recovery = usePoll(() => api.get<Recovery>(path));
  const r = recovery.data;
  if (!r) return <ErrorNote error={recovery.error} />;
  const done = r.endPosition === 0 ? 100 : Math.min(100, Math.round((r.position / r.endPosition) * 100));
  return (
    <p class="sub" role="status" data-recovery={r.id}>
      Recovery {new Date(r.since).toLocaleString()} – {new Date(r.until).toLocaleString()}: <span data-field="recovery-status">{r.status}</span>, {r.delivered} sent
      {r.status === 'running' ? ` (${done} % of the log read)` : ''}
      {r.gone ? ` · before ${new Date(r.gone.until).toLocaleString()} no longer in the log` : ''}
      {r.error ? ` · ${r.error}` : ''}
    </p>
  );
}

function DeliveryTable({ caption, deliveries, action }: { caption: string; deliveries: Delivery[]; action: { label: string; run: (d: Delivery) => unknown } }) {
  return (
    <div class="scroll">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Updated</th>
            <th scope="col"><span class="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((d) => (
            <tr key={d.id} data-delivery={d.id} data-event={d.eventId}>
              <th scope="row">{d.eventType}<span class="sub"><code>{d.eventId}</code></span></th>
              <td><span class={`badge ${d.status}`} data-field="status">{d.status}</span></td>
              <td>{d.attempts}</td>
              <td class="wrap">{[d.lastStatus, d.lastError].filter((x) => x !== undefined).join(' · ') || '—'}</td>
              <td>{new Date(d.updatedAt).toLocaleTimeString()}</td>
              <td><button type="button" onClick={() => void action.run(d)} aria-label={`${action.label} ${d.eventType} ${d.eventId}`}>{action.label}</button></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
