/**
 * Delivery of commands to a proto backend: the envelope at `POST {endpoint}commands`, unchanged
 * except `dataschema`, which becomes the backend's own catalogue `dataschema` of the type. The
 * backend produces the result events itself; the gateway emits `<CommandType>FailedV1` only when
 * it cannot deliver (a refusal, or retries exhausted).
 */
import { identityHeaders } from './identity-headers.ts';
import type { CommandEntry } from '../catalogue/command-catalogue.ts';
import type { OutboxEntry } from '../commands/CommandStore.ts';
import {
  defaultFailureType,
  failureData,
  resultEvent,
  type CommandDelivery,
  type DeliveryOutcome,
  type FailureReason,
} from '../commands/delivery.ts';
import type { CloudEvent } from '../log/EventLog.ts';
import { joinUrl } from '../manifest/rewrite.ts';
import { answerMessage, isTransientStatus, sendThroughCircuit, type CommandExchange } from './command-http.ts';
import type { ProtoBackend } from './proto-backend.ts';

/** Delivers to one proto backend. */
export class ProtoCommandDelivery implements CommandDelivery {
  readonly #backend: ProtoBackend;
  readonly #entryOf: (type: string) => CommandEntry | undefined;

  /**
   * @param backend the backend.
   * @param entryOf the catalogue lookup by type (read at each attempt: the catalogue refreshes).
   */
  constructor(backend: ProtoBackend, entryOf: (type: string) => CommandEntry | undefined) {
    this.#backend = backend;
    this.#entryOf = entryOf;
  }

  async deliver(entry: OutboxEntry, signal: AbortSignal, timeoutMs: number): Promise<DeliveryOutcome> {
    // The principal recorded when the command was accepted (never a token: it may have expired).
    const identity = identityHeaders(this.#backend.config.forwardIdentity, { principal: entry.principal });
    const headers: Record<string, string> = { accept: 'application/json', ...this.#backend.config.headers, ...identity };
    if (entry.traceparent) headers.traceparent = entry.traceparent;
    const body = { ...entry.command, dataschema: this.#ownDataschema(entry.command) };
    const request = { url: joinUrl(this.#backend.endpoint(), 'commands'), method: 'POST', headers, body, dispatcher: this.#backend.connections?.dispatcher };
    const exchange = await sendThroughCircuit(this.#backend.circuit, request, signal, timeoutMs);
    if (exchange.status >= 200 && exchange.status < 300) return { kind: 'delivered', events: [], ...answeredId(exchange, entry.id) };
    const reason = refusal(exchange);
    if (isTransientStatus(exchange.status)) return { kind: 'retry', reason, ...(exchange.retryAfterMs !== undefined && { retryAfterMs: exchange.retryAfterMs }) };
    return { kind: 'rejected', reason, events: [await this.failureEvent(entry, reason)] };
  }

  async failureEvent(entry: OutboxEntry, reason: FailureReason): Promise<CloudEvent> {
    return resultEvent({
      type: defaultFailureType(entry.command.type),
      source: this.#backend.config.source,
      correlationId: entry.id,
      data: failureData(reason),
    });
  }

  /**
   * The backend's own `dataschema` of the type; while its catalogue is not (or no longer) loaded,
   * `{endpoint}commands/{schema}/{version}` from the accepted (normalised, public) `dataschema`.
   */
  #ownDataschema(command: CloudEvent): string {
    const entry = this.#entryOf(command.type);
    if (entry?.backend === this.#backend.id && entry.backendDataschema) return entry.backendDataschema;
    const [version, schema] = String(command.dataschema ?? '').split('/').reverse();
    return joinUrl(this.#backend.endpoint(), `commands/${schema}/${version}`);
  }
}

/** The id the backend answered with, when it is not the envelope id (PROTOCOL-NOTES.md: it should echo it). */
function answeredId(exchange: CommandExchange, id: string): { backendId?: string } {
  const answered = (exchange.body as { id?: unknown } | undefined)?.id;
  return typeof answered === 'string' && answered !== '' && answered !== id ? { backendId: answered } : {};
}

/** The failure reason of a non-2xx answer: the backend's own error code when it gave one. */
function refusal(exchange: CommandExchange): FailureReason {
  const code = (exchange.body as { error?: { code?: unknown } } | undefined)?.error?.code;
  const fallback = isTransientStatus(exchange.status) ? 'BACKEND_UNAVAILABLE' : 'COMMAND_NOT_ACCEPTED';
  return { code: typeof code === 'string' && code !== '' ? code : fallback, message: answerMessage(exchange), status: exchange.status };
}
