/**
 * Webhooks: the signed-in caller's subscriptions, each with its recent deliveries (status,
 * attempts, last answer) and its dead letters, which can be re-delivered
 * (`POST /subscriptions/{id}/deliveries/{deliveryId}/retry`, write scope).
 */
import { useRef, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import type { Delivery, Subscription } from '../types.ts';
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
      {list.map((s) => <SubscriptionPanel key={s.id} api={api} subscription={s} />)}
    </section>
  );
}

function SubscriptionPanel({ api, subscription }: { api: Api; subscription: Subscription }) {
  const path = `subscriptions/${encodeURIComponent(subscription.id)}/deliveries`;
  const skip = useRef<{ cursor?: string }>({});
  const recent = usePoll(() => newestDeliveries(api, path, skip.current));
  const dead = usePoll(() => api.get<DeliveryPage>(path, { status: 'dead', limit: String(RECENT) }));
  const [retryError, setRetryError] = useState<unknown>();
  const retry = async (delivery: Delivery): Promise<void> => {
    try {
      await api.post(`${path}/${encodeURIComponent(delivery.id)}/retry`);
      setRetryError(undefined);
    } catch (err) {
      setRetryError(err);
    }
    await Promise.all([recent.refresh(), dead.refresh()]);
  };
  const titleId = `subscription-${subscription.id}`;
  return (
    <article class="panel" aria-labelledby={titleId} data-subscription={subscription.id}>
      <h2 id={titleId}>{subscription.webhook.url}</h2>
      <p class="sub">
        {subscription.id} · {subscription.status}
        {subscription.serviceId ? ` · service ${subscription.serviceId}` : ''}
        {subscription.filter ? ` · types ${subscription.filter.types.join(', ')}` : ' · every event'}
      </p>
      <ErrorNote error={recent.error ?? dead.error} />
      <ErrorNote error={retryError} />
      <h3>Dead letters</h3>
      {(dead.data?.deliveries.length ?? 0) === 0 ? <p class="hint">None.</p> : <DeliveryTable caption="Deliveries that gave up" deliveries={dead.data?.deliveries ?? []} onRetry={retry} />}
      <h3>Recent deliveries</h3>
      <DeliveryTable caption={`The newest ${RECENT} at most, newest first`} deliveries={recent.data ?? []} />
    </article>
  );
}

function DeliveryTable({ caption, deliveries, onRetry }: { caption: string; deliveries: Delivery[]; onRetry?: (d: Delivery) => void }) {
  return (
    <div class="scroll">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Updated</th>
            {onRetry && <th scope="col"><span class="sr-only">Actions</span></th>}
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
              {onRetry && <td><button type="button" onClick={() => onRetry(d)} aria-label={`Re-deliver ${d.eventType} ${d.eventId}`}>Re-deliver</button></td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
