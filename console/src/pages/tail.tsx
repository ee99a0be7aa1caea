/**
 * Live tail: the event stream with type, source and correlation filters, a pause that holds
 * arrivals back, and an inspector showing the chosen event's envelope pretty-printed. The stream
 * itself lives in `TailFeed`, so it keeps running while other pages are shown.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import type { TailFeed, TailFilter, TailState } from '../tail-feed.ts';
import { JsonBlock, PageHeading } from '../ui.tsx';

const CONNECTION_TEXT: Record<TailState['connection'], string> = {
  connecting: 'Connecting…',
  open: 'Live',
  reconnecting: 'Reconnecting (resumes after the last event seen)…',
  closed: 'Not connected',
};

export function TailPage({ api, feed }: { api: Api; feed: TailFeed }) {
  const [state, setState] = useState(feed.state);
  const [draft, setDraft] = useState<TailFilter>(feed.state.filter);
  const [inspected, setInspected] = useState<string>();
  useEffect(() => {
    const unsubscribe = feed.subscribe(setState);
    if (!feed.connected && api.canStream) feed.connect();
    return unsubscribe;
  }, [feed]);
  const apply = (event: Event): void => {
    event.preventDefault();
    feed.connect({ type: draft.type?.trim(), source: draft.source?.trim(), correlationId: draft.correlationId?.trim() });
  };
  const input = (name: keyof TailFilter, label: string) => (
    <div class="field">
      <label for={`tail-${name}`}>{label}</label>
      <input id={`tail-${name}`} type="text" value={draft[name] ?? ''} onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })} />
    </div>
  );
  const shown = state.events.find((e) => e.id === inspected);
  return (
    <section>
      <PageHeading>Live tail</PageHeading>
      {!api.canStream && <p class="error" role="alert">The live tail needs <code>auth.queryParam</code> in the gateway's config (EventSource cannot send the key in a header).</p>}
      <form class="filters" onSubmit={apply} aria-label="Stream filters">
        {input('type', 'Type')}
        {input('source', 'Source')}
        {input('correlationId', 'Correlation id')}
        <button type="submit">Apply filters</button>
      </form>
      <div class="toolbar">
        <span class={`connection ${state.connection}`} role="status">{CONNECTION_TEXT[state.connection]}</span>
        <button type="button" aria-pressed={state.paused} onClick={() => feed.setPaused(!state.paused)}>{state.paused ? `Resume (${state.held.length} waiting)` : 'Pause'}</button>
        <button type="button" class="secondary" onClick={() => feed.clear()}>Clear</button>
      </div>
      <div class="columns">
        <div class="scroll tail-list">
          <table>
            <caption>Newest first, {state.events.length} shown</caption>
            <thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Source</th><th scope="col">Correlation</th></tr></thead>
            <tbody>
              {state.events.map((e) => (
                <tr key={e.id} class={e.id === inspected ? 'selected' : undefined} data-type={e.type}>
                  <td>{e.time ? new Date(e.time).toLocaleTimeString() : '—'}</td>
                  <td><button type="button" class="link" aria-pressed={e.id === inspected} onClick={() => setInspected(e.id)}>{e.type}</button></td>
                  <td class="wrap">{e.source}</td>
                  <td class="wrap"><code>{e.correlationid ?? '—'}</code></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <aside class="inspector" aria-labelledby="inspector-title">
          <h2 id="inspector-title">Event inspector</h2>
          {shown ? <JsonBlock value={shown} label={`envelope of ${shown.type} ${shown.id}`} /> : <p class="hint">Choose an event to see its envelope.</p>}
        </aside>
      </div>
    </section>
  );
}
