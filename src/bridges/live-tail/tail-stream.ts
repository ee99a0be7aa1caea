/**
 * The live tail as an async iterable, for transports that pull (A2A task artifacts, MCP
 * notifications, a gRPC handler that awaits each write): `for await (const event of stream)`.
 * The consumer pulling the next event is the backpressure: replay waits while more than half of
 * `maxBufferedBytes` is queued, and live events that would pass the bound end the stream as a slow
 * consumer (reason `slow`); the log keeps everything, so the consumer can resume after its last id.
 */
import type { CloudEvent } from '../../log/EventLog.ts';
import type { LiveTail, TailRequest } from './live-tail.ts';
import type { TailEncoding } from './tail-event.ts';
import type { TailEndReason, TailMetrics, TailWriter } from './tail-subscriber.ts';
import { BacklogBound } from './backlog-bound.ts';

/** Events as they are: sized by their JSON length. */
const EVENT_ENCODING: TailEncoding<CloudEvent> = { encode: (event) => event, size: (event) => JSON.stringify(event).length };

/** What a pulling consumer asks for. */
export interface TailStreamRequest extends Omit<TailRequest<CloudEvent>, 'connection' | 'encoding' | 'metrics' | 'maxHeldBytes'> {
  /** Bound on events queued for this consumer, in bytes of JSON; default 1 MiB. */
  maxBufferedBytes?: number;
  metrics?: TailMetrics;
}

/** An open subscription read with `for await`; `close()` ends it (idempotent). */
export interface TailStream extends AsyncIterable<CloudEvent> {
  close(): void;
  /** Resolves with the reason once the subscription has ended. */
  readonly ended: Promise<TailEndReason>;
}

const NO_METRICS: TailMetrics = { replay: () => {}, sent: () => {} };

/** Opens a pulling subscription on `tail`. */
export function openTailStream(tail: LiveTail, request: TailStreamRequest): TailStream {
  const { maxBufferedBytes = 1 << 20, metrics = NO_METRICS, ...rest } = request;
  const writer = new QueueWriter(maxBufferedBytes);
  const { detach } = tail.attach({ ...rest, connection: writer, encoding: EVENT_ENCODING, maxHeldBytes: maxBufferedBytes, metrics });
  void writer.ended.then(detach);
  return {
    ended: writer.ended,
    close: () => writer.close('client'),
    [Symbol.asyncIterator]: () => writer.iterator(),
  };
}

/** A bounded queue between the tail (writer side) and one consumer (iterator side). */
class QueueWriter implements TailWriter<CloudEvent> {
  readonly #max: number;
  readonly #bound: BacklogBound;
  readonly #queue: Array<{ event: CloudEvent; size: number }> = [];
  #bytes = 0;
  #closed = false;
  #wakeConsumer: (() => void) | undefined;
  #wakeProducer: (() => void) | undefined;
  #end!: (reason: TailEndReason) => void;
  readonly ended = new Promise<TailEndReason>((resolve) => (this.#end = resolve));

  constructor(maxBytes: number) {
    this.#max = maxBytes;
    this.#bound = new BacklogBound(maxBytes);
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(event: CloudEvent): boolean {
    if (this.#closed) return false;
    const size = EVENT_ENCODING.size(event);
    if (!this.#bound.admits(this.#bytes, size)) {
      this.close('slow');
      return false;
    }
    this.#push(event, size);
    return true;
  }

  async sendPaced(event: CloudEvent): Promise<boolean> {
    if (this.#closed) return false;
    this.#push(event, EVENT_ENCODING.size(event));
    while (!this.#closed && this.#bytes > this.#max / 2) await new Promise<void>((resolve) => (this.#wakeProducer = resolve));
    return !this.#closed;
  }

  close(reason: TailEndReason): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#end(reason);
    this.#wake();
  }

  async *iterator(): AsyncGenerator<CloudEvent> {
    try {
      while (true) {
        const next = this.#queue.shift();
        if (next) {
          this.#bytes -= next.size;
          if (this.#bytes === 0) this.#bound.emptied();
          this.#wakeProducer?.();
          yield next.event;
          continue;
        }
        // A terminal event ends the subscription after it was queued: drain the queue first.
        if (this.#closed) return;
        await new Promise<void>((resolve) => (this.#wakeConsumer = resolve));
      }
    } finally {
      this.close('client');
    }
  }

  #push(event: CloudEvent, size: number): void {
    this.#queue.push({ event, size });
    this.#bytes += size;
    this.#bound.wrote(size);
    this.#wakeConsumer?.();
  }

  #wake(): void {
    this.#wakeConsumer?.();
    this.#wakeProducer?.();
  }
}
