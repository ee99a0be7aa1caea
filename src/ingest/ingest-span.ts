/**
 * The span of one batch of events ingested from a backend (`ingest {backend}`, a messaging
 * `receive`): a trace of its own, linked to the trace each event carries (CloudEvents
 * distributed-tracing extension, at most `MAX_LINKS`), parent of the log append.
 */
import type { CloudEvent } from '../log/EventLog.ts';
import { linksTo, messagingAttributes, SpanKind, startSpan, type Span } from '../telemetry/tracing.ts';

/** Starts the span of ingesting `events` from `backend` (`mode`: `follow` for proto backends, `poll` for legacy records). */
export function ingestSpan(backend: string, events: CloudEvent[], mode: 'follow' | 'poll'): Span {
  return startSpan(() => `ingest ${backend}`, {
    kind: SpanKind.CONSUMER,
    root: true,
    links: () => linksTo(...events.map((event) => event.traceparent)),
    attributes: () => ({
      ...messagingAttributes('receive', 'ingest', backend),
      'messaging.batch.message_count': events.length,
      'proto.backend': backend,
      'proto.ingest.mode': mode,
    }),
  });
}
