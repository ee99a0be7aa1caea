/**
 * One open MCP push stream on this replica, as SSE (MCP Streamable HTTP framing: `event: message`,
 * one JSON-RPC message per `data:` line, the event id as the SSE `id:`): a 2025 session's GET
 * stream, or a 2026-07-28 `subscriptions/listen` response. The events come from a `FollowPump`; the
 * writer waits for the socket to drain, so a slow client slows its own pump only (each follow is
 * bounded by the live tail's byte bound; the log keeps the rest). A comment line every
 * `KEEPALIVE_MS` keeps proxies from timing the stream out.
 */
import type { ServerResponse } from 'node:http';
import type { CloudEvent } from '../../log/EventLog.ts';
import { correlationUri } from './mcp-resources.ts';
import { EVENT_NOTIFICATION } from './mcp-server.ts';

/** Interval of the keep-alive comment, in ms. */
export const KEEPALIVE_MS = 15_000;

/** The SSE side of a push stream. */
export class PushStream {
  readonly #res: ServerResponse;
  readonly #meta: Record<string, unknown> | undefined;
  readonly #keepalive: NodeJS.Timeout;
  readonly closed: Promise<void>;
  #open = true;

  /** Starts the SSE response; `meta` is stamped on every notification (`_meta`, e.g. the subscription id). */
  constructor(res: ServerResponse, meta?: Record<string, unknown>) {
    this.#res = res;
    this.#meta = meta;
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    res.flushHeaders();
    this.#keepalive = setInterval(() => this.#write(': keepalive\n\n'), KEEPALIVE_MS);
    this.#keepalive.unref();
    this.closed = new Promise((resolve) => res.once('close', () => {
      this.#open = false;
      clearInterval(this.#keepalive);
      resolve();
    }));
  }

  get open(): boolean {
    return this.#open;
  }

  /** Writes one JSON-RPC message; resolves once the socket took it (false: the stream is gone). */
  async message(message: Record<string, unknown>, id?: string): Promise<boolean> {
    const frame = `${id !== undefined ? `id: ${id}\n` : ''}event: message\ndata: ${JSON.stringify(message)}\n\n`;
    if (this.#write(frame)) return this.#open;
    await Promise.race([new Promise((resolve) => this.#res.once('drain', resolve)), this.closed]);
    return this.#open;
  }

  /**
   * Pushes one event of a followed command as `notifications/proto/event`, then as
   * `notifications/resources/updated` of the command's correlation resource (with the event), for
   * clients that only follow resource subscriptions.
   */
  async event(correlationId: string, event: CloudEvent): Promise<boolean> {
    const meta = this.#meta && { _meta: this.#meta };
    if (!(await this.message({ jsonrpc: '2.0', method: EVENT_NOTIFICATION, params: { correlationId, event, ...meta } }, event.id))) return false;
    return this.message({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: correlationUri(correlationId), event, ...meta } });
  }

  /** Ends the stream (idempotent). */
  end(): void {
    if (!this.#open) return;
    this.#open = false;
    clearInterval(this.#keepalive);
    this.#res.end();
  }

  #write(frame: string): boolean {
    if (!this.#open) return false;
    return this.#res.write(frame);
  }
}
