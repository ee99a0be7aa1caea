/**
 * Pieces every page uses: polling an API call, showing an error, a pretty-printed JSON block, a
 * sparkline.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.ts';
import { sparklinePoints } from './rates.ts';

/** How often pages refresh what they show, in ms. */
export const POLL_MS = 2000;

/** The latest answer of `load` (called now and every `intervalMs`), its error, and `refresh` to call it at once. */
export function usePoll<T>(load: () => Promise<T>, intervalMs = POLL_MS): { data: T | undefined; error: unknown; refresh: () => Promise<void> } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const latest = useRef(load);
  latest.current = load;
  const refresh = useCallback(async () => {
    try {
      setData(await latest.current());
      setError(undefined);
    } catch (err) {
      setError(err);
    }
  }, []);
  useEffect(() => {
    void refresh();
    const timer = setInterval(() => void refresh(), intervalMs);
    return () => clearInterval(timer);
  }, [refresh, intervalMs]);
  return { data, error, refresh };
}

/** A human sentence for an error, naming the missing scope when the gateway said which. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return 'The key was not accepted: sign out and sign in again.';
    if (error.status === 403) return `Not allowed with this key: ${error.message}`;
    return `${error.message}${error.code ? ` (${error.code})` : ''}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** An error, announced to screen readers; nothing when there is none. */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined) return null;
  return <p class="error" role="alert">{describeError(error)}</p>;
}

/** A value as indented JSON. */
export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return <pre class="json" tabIndex={0} aria-label={label}>{JSON.stringify(value, null, 2)}</pre>;
}

/** A small line chart of `values` (oldest first) with its latest value as text. */
export function Sparkline({ label, values, format }: { label: string; values: Array<number | null>; format: (v: number | null) => string }) {
  const latest = values.at(-1) ?? null;
  return (
    <figure class="spark">
      <figcaption>
        {label}: <strong>{format(latest)}</strong>
      </figcaption>
      <svg viewBox="0 -2 200 42" width="200" height="42" role="img" aria-label={`${label} over the last ${values.length} samples`}>
        <polyline points={sparklinePoints(values, 200, 38)} fill="none" stroke="currentColor" stroke-width="1.5" />
      </svg>
    </figure>
  );
}

/** A page's heading, focused when the page opens so keyboard and screen reader users land on it. */
export function PageHeading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return <h1 ref={ref} tabIndex={-1}>{children}</h1>;
}
