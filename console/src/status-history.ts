/**
 * `GET /status` polled every 2 seconds for as long as the console is open, with the rates between
 * consecutive polls (rates.ts) kept for the last two minutes: the Backends page shows the latest
 * answer, the Metrics page draws the rates, and a burst that happened while another page was shown
 * is still in the sparklines.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { rateBetween, type RatePoint } from './rates.ts';
import type { GatewayStatus } from './types.ts';
import { POLL_MS } from './ui.tsx';

/** Rate points kept: two minutes at one poll every 2 s. */
export const HISTORY = 60;

export interface StatusHistory {
  latest: GatewayStatus | undefined;
  /** Oldest first. */
  points: RatePoint[];
  /** Why the last poll failed; undefined once one succeeds. */
  error: unknown;
}

/** Polls `/status` with `api` until unmounted. */
export function useStatusHistory(api: Api): StatusHistory {
  const [history, setHistory] = useState<StatusHistory>({ latest: undefined, points: [], error: undefined });
  useEffect(() => {
    let previous: (GatewayStatus & { atMs: number }) | undefined;
    const poll = async (): Promise<void> => {
      try {
        const sample = { ...(await api.get<GatewayStatus>('status')), atMs: Date.now() };
        const point = previous && rateBetween(previous, sample);
        previous = sample;
        setHistory((h) => ({ latest: sample, points: point ? [...h.points, point].slice(-HISTORY) : h.points, error: undefined }));
      } catch (error) {
        setHistory((h) => ({ ...h, error }));
      }
    };
    void poll();
    const timer = setInterval(() => void poll(), POLL_MS);
    return () => clearInterval(timer);
  }, [api]);
  return history;
}
