/**
 * The HTTP client of webhook deliveries: one undici Agent whose sockets resolve their host through
 * the SSRF guard (`connect.lookup`), so the address validated is the address connected to, with no
 * second DNS answer in between (DNS rebinding, PROTOCOL.md 6.3 rule 4). The URL is left as given,
 * so `Host` and the TLS server name stay the subscriber's host name.
 *
 * Redirects are never followed (undici's `request` does not follow them without an interceptor);
 * the attempt is bounded by `webhooks.timeout` end to end; `webhooks.ca` is trusted beside the
 * system roots; response bodies are read up to `MAX_RESPONSE_BYTES` and dropped.
 */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
import { isProtoError } from '../errors.ts';
import type { AttemptResult } from './retry-policy.ts';
import { parseRetryAfter } from './retry-policy.ts';
import type { RefusalReason, SsrfGuard } from './ssrf-guard.ts';

/** Bytes of a receiver's answer read (then dropped) so the connection can be reused: 64 KiB. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** Settings of the client. */
export interface DeliveryClientOptions {
  guard: SsrfGuard;
  /** Whole attempt (connect, send, answer), ms (`webhooks.timeout`). */
  timeoutMs: number;
  /** Extra CA file (PEM) to trust (`webhooks.ca`); default the system roots only. */
  caFile?: string;
  /** Connections per receiver origin; default 4 (the per-subscription concurrency). */
  connectionsPerOrigin?: number;
}

/** URLs whose check before connecting is remembered at most; beyond, the memory starts over. */
export const MAX_CHECKED_URLS = 10_000;

/** The result of one POST, with the guard's refusal reason when the target was refused. */
export interface DeliveryResponse extends AttemptResult {
  refusal?: RefusalReason;
}


/** Posts signed deliveries through SSRF-checked, address-pinned connections. */
export class DeliveryClient {
  readonly #guard: SsrfGuard;
  readonly #timeoutMs: number;
  readonly #agent: Agent;
  /** URLs that passed the guard's check before connecting. */
  readonly #checked = new Set<string>();
  #closed: Promise<void> | undefined;

  constructor(options: DeliveryClientOptions) {
    this.#guard = options.guard;
    this.#timeoutMs = options.timeoutMs;
    const ca = options.caFile ? [...rootCertificates, readFileSync(options.caFile, 'utf8')] : undefined;
    this.#agent = new Agent({
      connect: { lookup: options.guard.lookup, ...(ca ? { ca } : {}), timeout: options.timeoutMs },
      connections: options.connectionsPerOrigin ?? 4,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  /** POSTs `body` to `url`; never throws: a failure is in `error` (and `refusal` when the guard refused). */
  async post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<DeliveryResponse> {
    // One controller and one timer per attempt, aborted by the deadline or by the caller's signal
    // (cheaper than `AbortSignal.timeout` joined by `AbortSignal.any`, measured in issue 28).
    const attempt = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      attempt.abort(new DOMException('the attempt timed out', 'TimeoutError'));
    }, this.#timeoutMs);
    timer.unref();
    const onAbort = (): void => attempt.abort(signal!.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (!this.#checked.has(url)) await this.#checkTarget(url);
      const res = await request(url, { method: 'POST', headers, body, dispatcher: this.#agent, signal: attempt.signal });
      await res.body.dump({ limit: MAX_RESPONSE_BYTES });
      return { status: res.statusCode, retryAfterMs: parseRetryAfter(res.headers['retry-after'], Date.now()) };
    } catch (err) {
      return failure(err, timedOut);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * The guard's check before connecting (`SsrfGuard.checkBeforeConnect`), once per URL: its verdict
   * depends on the URL alone (scheme, user-info, host; an IP literal host's address), and the guard
   * does not change, so a URL that passed is remembered (up to `MAX_CHECKED_URLS`). A refusal is
   * not remembered: it is judged, counted and answered again on every attempt. A host name is
   * resolved and checked by each connection's own lookup, as before.
   */
  async #checkTarget(url: string): Promise<void> {
    await this.#guard.checkBeforeConnect(url);
    if (this.#checked.size >= MAX_CHECKED_URLS) this.#checked.clear();
    this.#checked.add(url);
  }

  /** Closes the pooled connections. Safe to call twice. */
  close(): Promise<void> {
    this.#closed ??= this.#agent.close();
    return this.#closed;
  }
}

/** The attempt result of an error: the guard's refusal, a timeout, or the network error's code. */
function failure(err: unknown, timedOut: boolean): DeliveryResponse {
  const refusal = findRefusal(err);
  if (refusal) return { error: `target refused: ${refusal}`, refusal };
  if (timedOut) return { error: 'timeout' };
  const code = (err as { code?: unknown }).code;
  return { error: typeof code === 'string' ? code : err instanceof Error ? err.name : 'error' };
}

/** The SSRF refusal reason inside an error (undici wraps connect errors in `cause` or an AggregateError). */
function findRefusal(err: unknown, depth = 0): RefusalReason | undefined {
  if (!err || typeof err !== 'object' || depth > 4) return undefined;
  if (isProtoError(err) && err.code === 'WEBHOOK_URL_REJECTED') return err.details?.reason as RefusalReason;
  const nested = [(err as { cause?: unknown }).cause, ...((err as { errors?: unknown[] }).errors ?? [])];
  for (const inner of nested) {
    const found = findRefusal(inner, depth + 1);
    if (found) return found;
  }
  return undefined;
}
