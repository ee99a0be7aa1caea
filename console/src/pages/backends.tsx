/**
 * Backends: every service behind the gateway with its status (`GET /services`) and health (the
 * latest `GET /status`: circuit, ingest lag, outbox depth, last error), and pause / resume (admin
 * scope).
 */
import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import type { StatusHistory } from '../status-history.ts';
import type { BackendStatus, ServiceDescriptor } from '../types.ts';
import { describeError, ErrorNote, PageHeading, usePoll } from '../ui.tsx';

export function BackendsPage({ api, status }: { api: Api; status: StatusHistory }) {
  const services = usePoll(() => api.get<{ services: ServiceDescriptor[] }>('services'));
  const [actionError, setActionError] = useState<unknown>();
  const health = new Map((status.latest?.backends ?? []).map((b) => [b.id, b]));
  const act = async (id: string, action: 'pause' | 'resume'): Promise<void> => {
    try {
      await api.post(`services/${encodeURIComponent(id)}/${action}`);
      setActionError(undefined);
    } catch (err) {
      setActionError(err);
    }
    await services.refresh();
  };
  return (
    <section aria-labelledby="backends-title">
      <PageHeading><span id="backends-title">Backends</span></PageHeading>
      <ErrorNote error={services.error} />
      <ErrorNote error={actionError} />
      {status.error !== undefined && <p class="hint">Health details are unavailable: {describeError(status.error)}</p>}
      <div class="scroll">
        <table>
          <caption>Services behind the gateway, refreshed every 2 seconds</caption>
          <thead>
            <tr>
              <th scope="col">Service</th>
              <th scope="col">Status</th>
              <th scope="col">Circuit</th>
              <th scope="col">Ingest lag</th>
              <th scope="col">Outbox</th>
              <th scope="col">Last error</th>
              <th scope="col"><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {(services.data?.services ?? []).map((service) => (
              <BackendRow key={service.id} service={service} health={health.get(service.id)} onAction={act} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function BackendRow({ service, health, onAction }: { service: ServiceDescriptor; health: BackendStatus | undefined; onAction: (id: string, action: 'pause' | 'resume') => void }) {
  const action = service.status === 'paused' ? 'resume' : 'pause';
  return (
    <tr data-service={service.id}>
      <th scope="row">
        {service.id}
        <span class="sub">{service.name}{service.type ? ` · ${service.type}` : ''}</span>
      </th>
      <td><span class={`badge ${service.status}`} data-field="status">{service.status}</span></td>
      <td><span class={`badge circuit-${health?.circuit?.state ?? 'unknown'}`}>{health?.circuit?.state ?? '—'}</span></td>
      <td>{health?.ingest.lagSeconds == null ? '—' : `${health.ingest.lagSeconds.toFixed(1)} s`}</td>
      <td>{health ? health.outbox.depth : '—'}</td>
      <td class="wrap">{health?.lastError ?? '—'}</td>
      <td>
        <button type="button" onClick={() => onAction(service.id, action)} aria-label={`${action === 'pause' ? 'Pause' : 'Resume'} ${service.id}`}>
          {action === 'pause' ? 'Pause' : 'Resume'}
        </button>
      </td>
    </tr>
  );
}
