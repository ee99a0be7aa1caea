/**
 * The bytes of an event stream (HTML Living Standard, 9.2.5 Parsing an event stream): one event is
 * `id: <event id>` and one `data:` line holding the CloudEvents envelope as one-line JSON
 * (PROTOCOL.md 4.3, rules 1 and 2), then the blank line that dispatches it. Frames are encoded once
 * and the same bytes are written to every stream.
 */
import type { CloudEvent } from '../../log/EventLog.ts';

/** The reconnection delay announced in the first `retry:` field, in milliseconds. */
export const RETRY_MS = 2000;

/** A keepalive comment (PROTOCOL.md 4.3, rule 6). */
export const KEEPALIVE_FRAME: Buffer = Buffer.from(': keepalive\n\n');

/** The last comment of a stream the gateway ends because it shuts down (the client reconnects elsewhere with `Last-Event-ID`). */
export const SHUTDOWN_FRAME: Buffer = Buffer.from(': shutdown\n\n');

/** The comment that opens a stream whose `Last-Event-ID` is no longer (or never was) in the log. */
export const RESET_FRAME: Buffer = Buffer.from(': reset\n\n');

/** Characters that would end an SSE field early; an `id` holding one cannot be echoed (9.2.6). */
const LINE_BREAK_OR_NUL = /[\r\n\0]/;

/**
 * The frame of one event. `JSON.stringify` escapes every line break inside strings, so `data` is
 * always one line. An id that contains a line break or NUL is left out of the `id:` field (it
 * would split the field, and a browser ignores an id holding NUL), so the event still arrives.
 */
export function eventFrame(event: CloudEvent): Buffer {
  const id = typeof event.id === 'string' && !LINE_BREAK_OR_NUL.test(event.id) ? `id: ${event.id}\n` : '';
  return Buffer.from(`${id}data: ${JSON.stringify(event)}\n\n`);
}

/** The `retry:` field that opens every stream, so clients reconnect after `ms` (9.2.6). */
export function retryFrame(ms: number = RETRY_MS): Buffer {
  return Buffer.from(`retry: ${ms}\n\n`);
}
