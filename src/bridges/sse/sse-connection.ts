/**
 * One SSE response on the wire: headers flushed at once, the `retry:` field first, keepalive
 * comments while idle, and a bound on what the client may leave unread. A client whose unread
 * bytes would pass `sse.maxBufferedBytes` is disconnected (it reconnects with `Last-Event-ID` and
 * the log replays what it missed); nothing is ever buffered for it without bound. The bound is on
 * the backlog, never on one event (`BacklogBound`): an event larger than it is still delivered.
 *
 * It knows bytes, not events: what to send, and when, is the subscriber's business.
 */
import type { ServerResponse } from 'node:http';
import { BacklogBound } from '../live-tail/backlog-bound.ts';
import type { TailEndReason, TailWriter } from '../live-tail/tail-subscriber.ts';
import { KEEPALIVE_FRAME, RESET_FRAME, SHUTDOWN_FRAME, retryFrame } from './sse-frame.ts';

/** Why a stream ended. */
export type CloseReason = TailEndReason;

/** Options of `SseConnection`. */
export interface SseConnectionOptions {
  /** Idle time after which a `: keepalive` comment is sent, in ms; 0 disables. */
  keepaliveMs: number;
  /** Unread bytes a client may leave in userland buffers before it is dropped (`sse.maxBufferedBytes`). */
  maxBufferedBytes: number;
  /** Called once when the stream ends, whoever ended it. */
  onClose(reason: CloseReason): void;
}

/** The response headers of a stream (PROTOCOL.md 4.3): no caching, no proxy buffering, no compression. */
const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  // nginx and compatible proxies buffer responses unless told not to.
  'X-Accel-Buffering': 'no',
};

/** A stream's writing end. `close()` is idempotent. */
export class SseConnection implements TailWriter<Buffer> {
  readonly #res: ServerResponse;
  readonly #options: SseConnectionOptions;
  readonly #bound: BacklogBound;
  #keepalive: NodeJS.Timeout | undefined;
  #closed = false;

  /** Binds to `res`; nothing is written until `open()`. */
  constructor(res: ServerResponse, options: SseConnectionOptions) {
    this.#res = res;
    this.#options = options;
    this.#bound = new BacklogBound(options.maxBufferedBytes);
    res.once('close', () => this.close('client'));
    res.on('drain', () => this.#bound.emptied());
  }

  /** True once the stream has ended, by us or by the client going away. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Sends the status, the headers and the `retry:` field now, not with the first event. */
  open(): void {
    if (this.#closed) return;
    // The client may be gone already; its 'close' has then been emitted and will not come again.
    if (this.#res.destroyed) return this.close('client');
    this.#res.writeHead(200, STREAM_HEADERS);
    this.#res.write(retryFrame());
    if (this.#options.keepaliveMs > 0) {
      this.#keepalive = setInterval(() => this.send(KEEPALIVE_FRAME), this.#options.keepaliveMs);
    }
  }

  /**
   * Writes a frame now (live delivery). If the client already has unread bytes and this frame
   * would take them past the bound (`BacklogBound`: one event larger than the limit is allowed on
   * top of it), the client is dropped as a slow consumer instead. Returns false when the stream is
   * (now) closed.
   */
  send(frame: Buffer): boolean {
    if (this.#closed) return false;
    if (!this.#bound.admits(this.#res.writableLength, frame.length)) {
      this.close('slow');
      return false;
    }
    this.#write(frame);
    return true;
  }

  /** Tells the client its `Last-Event-ID` is no longer in the log: a `: reset` comment. */
  reset(): void {
    this.send(RESET_FRAME);
  }

  /**
   * Writes a frame and, when the response asks for it, waits until the client has read enough
   * (`drain`) or has gone. Used by replay, which reads from the log at the client's pace instead
   * of buffering. Resolves false when the stream is (now) closed.
   */
  async sendPaced(frame: Buffer): Promise<boolean> {
    if (this.#closed) return false;
    if (!this.#write(frame)) await this.#drained();
    return !this.#closed;
  }

  /**
   * Ends the stream. A slow consumer is cut at once (its unread bytes are dropped, which is the
   * point); other endings flush what was written, and at shutdown a final `: shutdown` comment
   * is written and the socket is closed after it, so the server's drain does not wait on an idle
   * keep-alive connection. Idempotent.
   */
  close(reason: CloseReason): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#keepalive);
    const res = this.#res;
    if (reason === 'slow' || reason === 'error') res.destroy();
    else if (reason === 'shutdown') res.end(SHUTDOWN_FRAME, () => res.socket?.destroy());
    else if (reason !== 'client') res.end();
    this.#options.onClose(reason);
  }

  #write(frame: Buffer): boolean {
    // Any write proves the connection alive: the keepalive waits a full interval from here.
    this.#keepalive?.refresh();
    this.#bound.wrote(frame.length);
    return this.#res.write(frame);
  }

  #drained(): Promise<void> {
    const res = this.#res;
    return new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}
