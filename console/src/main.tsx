/**
 * The console's shell: reads `config.json`, asks for an API key when the gateway wants one (kept
 * in `sessionStorage`, so it lasts as long as the tab), and shows one page at a time, chosen by
 * the URL's fragment (`#/backends`…) so the page works at any path the gateway serves it from.
 */
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { Api, ApiError, loadConfig, storedKey, storeKey, type ConsoleConfig } from './api.ts';
import { BackendsPage } from './pages/backends.tsx';
import { CataloguePage } from './pages/catalogue.tsx';
import { MetricsPage } from './pages/metrics.tsx';
import { TailPage } from './pages/tail.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { useStatusHistory } from './status-history.ts';
import { TailFeed } from './tail-feed.ts';
import { describeError } from './ui.tsx';
import './style.css';

const PAGES = [
  { id: 'backends', title: 'Backends' },
  { id: 'catalogue', title: 'Catalogue' },
  { id: 'tail', title: 'Live tail' },
  { id: 'webhooks', title: 'Webhooks' },
  { id: 'metrics', title: 'Metrics' },
] as const;

type PageId = (typeof PAGES)[number]['id'];

function pageOf(hash: string): PageId {
  const id = hash.replace(/^#\/?/, '');
  return PAGES.find((p) => p.id === id)?.id ?? 'backends';
}

function App() {
  const [config, setConfig] = useState<ConsoleConfig>();
  const [failure, setFailure] = useState<unknown>();
  const [key, setKey] = useState(storedKey());
  const api = useMemo(() => config && new Api(config, key), [config, key]);
  useEffect(() => {
    loadConfig().then(setConfig, setFailure);
  }, []);
  if (failure !== undefined) return <p class="error" role="alert">The console could not start: {describeError(failure)}</p>;
  if (!config || !api) return <p>Loading…</p>;
  const signIn = (next: string | undefined): void => {
    storeKey(next);
    setKey(next);
  };
  if (config.auth.type !== 'none' && key === undefined) return <SignIn config={config} onSignIn={signIn} />;
  return <Console api={api} onSignOut={config.auth.type === 'none' ? undefined : () => signIn(undefined)} />;
}

/** Asks for a key and checks it with `GET /services` (the read scope) before keeping it. */
function SignIn({ config, onSignIn }: { config: ConsoleConfig; onSignIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string>();
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    try {
      await new Api(config, key).get('services');
      onSignIn(key);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'That key is not valid.' : describeError(err));
    }
  };
  return (
    <main class="signin">
      <h1>proto-gateway console</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} aria-describedby={error ? 'signin-error' : undefined} />
        <button type="submit">Sign in</button>
        {error && <p id="signin-error" class="error" role="alert">{error}</p>}
      </form>
      <p class="hint">The key stays in this tab only. Every action uses the key's own scopes.</p>
    </main>
  );
}

/** The fragment chooses the page, so the skip link moves focus itself instead of changing it. */
function skipToContent(event: Event): void {
  event.preventDefault();
  document.getElementById('content')?.focus();
}

function Console({ api, onSignOut }: { api: Api; onSignOut: (() => void) | undefined }) {
  const [page, setPage] = useState(pageOf(location.hash));
  const tail = useMemo(() => new TailFeed(api), [api]);
  const status = useStatusHistory(api);
  useEffect(() => {
    const onHash = (): void => setPage(pageOf(location.hash));
    addEventListener('hashchange', onHash);
    return () => {
      removeEventListener('hashchange', onHash);
      tail.close();
    };
  }, [tail]);
  return (
    <>
      <a class="skip" href="#content" onClick={skipToContent}>Skip to content</a>
      <header>
        <span class="brand">proto-gateway</span>
        <nav aria-label="Console pages">
          <ul>
            {PAGES.map((p) => (
              <li key={p.id}>
                <a href={`#/${p.id}`} aria-current={p.id === page ? 'page' : undefined}>{p.title}</a>
              </li>
            ))}
          </ul>
        </nav>
        {onSignOut && <button type="button" class="secondary" onClick={onSignOut}>Sign out</button>}
      </header>
      <main id="content" tabIndex={-1}>
        {page === 'backends' && <BackendsPage api={api} status={status} />}
        {page === 'catalogue' && <CataloguePage api={api} />}
        {page === 'tail' && <TailPage api={api} feed={tail} />}
        {page === 'webhooks' && <WebhooksPage api={api} />}
        {page === 'metrics' && <MetricsPage status={status} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
