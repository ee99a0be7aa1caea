/**
 * An append to the event log under a span (`append events`, a messaging `create`), and the
 * CloudEvents distributed-tracing extension (`traceparent`, `tracestate`) on the events produced
 * under a trace: an event that arrives without one gets the append span's context, so every
 * consumer (webhook, SSE, gRPC, MCP, A2A) can continue or link to the trace that produced it. An
 * event that already carries one (a backend's own) keeps it. Tracing off: the plain append.
 */
import { annotate, inSpan, isTraced, messagingAttributes, SpanKind, startSpan, traceparentOf, tracestateOf } from '../telemetry/tracing.ts';
import type { AppendResult, Checkpoint, EventLog, NewEvent } from './EventLog.ts';

/** `log.append(batch, checkpoint)` under an `append events` span (see the file comment). */
export function appendTraced(log: Pick<EventLog, 'append'>, batch: NewEvent[], checkpoint?: Checkpoint): Promise<AppendResult> {
  const span = startSpan('append events', {
    kind: SpanKind.PRODUCER,
    attributes: () => ({
      ...messagingAttributes('create', 'append', 'events'),
      'messaging.batch.message_count': batch.length,
      ...(batch.length === 1 && { 'messaging.message.id': batch[0]!.event.id, 'proto.event.type': batch[0]!.event.type }),
    }),
  });
  if (!isTraced(span)) return log.append(batch, checkpoint);
  const traceparent = traceparentOf(span)!;
  const tracestate = tracestateOf(span);
  const stamped = batch.map((item) =>
    typeof item.event.traceparent === 'string' ? item : { ...item, event: { ...item.event, traceparent, ...(tracestate !== undefined && { tracestate }) } },
  );
  return inSpan(span, async () => {
    const result = await log.append(stamped, checkpoint);
    annotate(span, () => ({ 'proto.log.appended': result.appended.length, 'proto.log.duplicates': result.duplicates }));
    return result;
  });
}
