/**
 * The port between the dispatcher and the backend adapters (`backends/proto-dispatch.ts`,
 * `backends/legacy-dispatch.ts`): one attempt to deliver one outbox entry, and what it came to.
 * Also the result events the gateway emits itself (DESIGN.md, Conventions: "Events the gateway
 * emits itself"): `source` = the backend's source, `correlationid` = the command id, for failures
 * `data: { error: { code, message, status? } }`, and a deterministic `id` (`resultEventId`): a crash
 * between appending a result event and completing the outbox entry re-delivers the command, and the
 * second result event has the same id, so the log keeps one (exactly once in the log).
 */
import { v5 as uuidv5 } from 'uuid';
import type { CloudEvent } from '../log/EventLog.ts';
import type { OutboxEntry } from './CommandStore.ts';

/** Why a delivery failed, as failure events carry it. */
export interface FailureReason {
  /** A catalogued code (`BACKEND_UNAVAILABLE`, `BACKEND_TIMEOUT`, `COMMAND_NOT_ACCEPTED`…) or the backend's own. */
  code: string;
  message: string;
  /** The backend's HTTP status, when it answered. */
  status?: number;
}

/** What one attempt came to. */
export type DeliveryOutcome =
  /** The backend took the command; `events` are the result events to append; `backendId` is the id it answered with, when another. */
  | { kind: 'delivered'; events: CloudEvent[]; backendId?: string }
  /** The backend refused it for good (a 4xx other than 429); `events` hold the failure event. */
  | { kind: 'rejected'; events: CloudEvent[]; reason: FailureReason }
  /** A transient failure (connection, timeout, 5xx, 429): try again later, not before `retryAfterMs`. */
  | { kind: 'retry'; reason: FailureReason; retryAfterMs?: number };

/** Delivers commands to one backend. */
export interface CommandDelivery {
  /**
   * One attempt. `signal` aborts it (gateway shutdown): the promise then rejects with the signal's
   * reason and the entry stays in the outbox. `timeoutMs` bounds the whole exchange.
   */
  deliver(entry: OutboxEntry, signal: AbortSignal, timeoutMs: number): Promise<DeliveryOutcome>;
  /** The failure event of a command whose retries are exhausted. */
  failureEvent(entry: OutboxEntry, reason: FailureReason): Promise<CloudEvent>;
}

/** The fields of an event the gateway emits for a command. */
export interface ResultEventFields {
  type: string;
  source: string;
  /** The command id. */
  correlationId: string;
  data: Record<string, unknown>;
}

/** The project's UUIDv5 namespace for the ids of result events. Never change it: stored ids depend on it. */
export const RESULT_EVENT_NAMESPACE = '581ef00f-78f4-4bfd-b46b-c10d580b48f4';

/** The id of the result event of `commandId` with `outcome` (the event type): a UUIDv5, the same on every re-delivery. */
export function resultEventId(commandId: string, outcome: string): string {
  return uuidv5(`${commandId}\n${outcome}`, RESULT_EVENT_NAMESPACE);
}

/** An event the gateway emits itself: a deterministic id (`resultEventId` of the command id and type), now, no `dataschema`. */
export function resultEvent(fields: ResultEventFields): CloudEvent {
  return {
    specversion: '1.0',
    id: resultEventId(fields.correlationId, fields.type),
    source: fields.source,
    type: fields.type,
    datacontenttype: 'application/json',
    correlationid: fields.correlationId,
    time: new Date().toISOString(),
    data: fields.data,
  };
}

/** The `data` of a failure event. */
export function failureData(reason: FailureReason): Record<string, unknown> {
  const error: Record<string, unknown> = { code: reason.code, message: reason.message };
  if (reason.status !== undefined) error.status = reason.status;
  return { error };
}

/** The default failure event type of a command type: `<CommandType>FailedV1`. */
export function defaultFailureType(commandType: string): string {
  return `${commandType}FailedV1`;
}
