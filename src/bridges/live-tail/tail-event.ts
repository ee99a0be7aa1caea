/**
 * One appended event as the live tail hands it to every subscriber: its filter keys computed once,
 * and each transport's encoding of it (SSE bytes, a protobuf message) computed once per event on
 * first use, whatever the number of subscribers sharing that encoding.
 */
import type { CloudEvent, StoredEvent } from '../../log/EventLog.ts';
import { eventKeys, type EventKeys } from '../../log/event-query.ts';

/** How a transport frames an event, and how big that frame is (the unit of the per-subscriber byte bound). */
export interface TailEncoding<F> {
  encode(event: CloudEvent): F;
  size(frame: F): number;
}

/** An appended event with its keys and its memoised frames. */
export class TailEvent {
  readonly position: number;
  readonly keys: EventKeys;
  readonly event: CloudEvent;
  readonly #frames = new Map<TailEncoding<unknown>, unknown>();

  constructor(stored: StoredEvent) {
    this.position = stored.position;
    this.keys = eventKeys(stored);
    this.event = stored.event;
  }

  /** The event in `encoding`, encoded once for every subscriber. */
  frame<F>(encoding: TailEncoding<F>): F {
    let frame = this.#frames.get(encoding) as F | undefined;
    if (frame === undefined) {
      frame = encoding.encode(this.event);
      this.#frames.set(encoding, frame);
    }
    return frame;
  }
}
