/**
 * Delivery of commands to a legacy REST backend, mapped by its configuration (DESIGN.md,
 * `commands[].request` and `events`): `request.method` to the `path` template with the `body`
 * expression (inputs `{ command, data }`; default body: `data`), the command id in
 * `correlationHeader`, the backend's headers and the trace context. A 2xx answer yields the
 * `events.success` event (its `data` expression sees `{ command, data, response, status }`;
 * default: the response when it is an object); a final refusal or exhausted retries yield the
 * `events.failure` event (`<Type>FailedV1` unless configured). Every mapping is compiled at boot.
 */
import { identityHeaders } from './identity-headers.ts';
import type { OutboxEntry } from '../commands/CommandStore.ts';
import {
  defaultFailureType,
  failureData,
  resultEvent,
  type CommandDelivery,
  type DeliveryOutcome,
  type FailureReason,
} from '../commands/delivery.ts';
import type { LegacyCommandConfig } from '../config/types.ts';
import type { CloudEvent } from '../log/EventLog.ts';
import { joinUrl } from '../manifest/rewrite.ts';
import { compileExpression, compileTemplate, type CompiledExpression, type CompiledTemplate } from '../mapping/jsonata.ts';
import { renderPath } from '../mapping/path-template.ts';
import { answerMessage, isTransientStatus, sendThroughCircuit, type CommandExchange } from './command-http.ts';
import type { LegacyBackend } from './legacy-backend.ts';

/** One configured command, its mappings compiled. */
interface MappedCommand {
  method: string;
  path: CompiledTemplate;
  body?: CompiledExpression;
  success?: { type: string; data?: CompiledExpression };
  failureType: string;
}

/** Delivers to one legacy backend. */
export class LegacyCommandDelivery implements CommandDelivery {
  readonly #backend: LegacyBackend;
  readonly #commands = new Map<string, MappedCommand>();

  /** Compiles every command mapping of `backend` (the config loader has already checked they compile). */
  constructor(backend: LegacyBackend) {
    this.#backend = backend;
    for (const command of backend.config.commands) this.#commands.set(command.type, compile(command));
  }

  async deliver(entry: OutboxEntry, signal: AbortSignal, timeoutMs: number): Promise<DeliveryOutcome> {
    const mapped = this.#commands.get(entry.command.type);
    if (!mapped) return this.#reject(entry, { code: 'COMMAND_NOT_ACCEPTED', message: `${this.#backend.id} no longer accepts ${entry.command.type}` });
    const input = { command: entry.command, data: entry.command.data };
    let path: string;
    let body: unknown;
    try {
      // Ingestion refused unsafe paths already (VALIDATION_FAILED); this is the backstop.
      path = await renderPath(mapped.path, input);
      body = mapped.body ? await mapped.body.evaluate(input) : mapped.method === 'GET' ? undefined : entry.command.data;
    } catch (err) {
      return this.#reject(entry, { code: 'MAPPING_FAILED', message: (err as Error).message });
    }
    const request = { url: joinUrl(this.#backend.config.url, path), method: mapped.method, headers: this.#headers(entry), body };
    const exchange = await sendThroughCircuit(this.#backend.circuit, request, signal, timeoutMs);
    if (exchange.status >= 200 && exchange.status < 300) return { kind: 'delivered', events: await this.#successEvents(entry, mapped, exchange) };
    const reason: FailureReason = { code: isTransientStatus(exchange.status) ? 'BACKEND_UNAVAILABLE' : 'COMMAND_NOT_ACCEPTED', message: answerMessage(exchange), status: exchange.status };
    if (isTransientStatus(exchange.status)) return { kind: 'retry', reason, ...(exchange.retryAfterMs !== undefined && { retryAfterMs: exchange.retryAfterMs }) };
    return this.#reject(entry, reason);
  }

  async failureEvent(entry: OutboxEntry, reason: FailureReason): Promise<CloudEvent> {
    const type = this.#commands.get(entry.command.type)?.failureType ?? defaultFailureType(entry.command.type);
    return resultEvent({ type, source: this.#backend.config.source, correlationId: entry.id, data: failureData(reason) });
  }

  async #reject(entry: OutboxEntry, reason: FailureReason): Promise<DeliveryOutcome> {
    return { kind: 'rejected', reason, events: [await this.failureEvent(entry, reason)] };
  }

  #headers(entry: OutboxEntry): Record<string, string> {
    // The principal recorded when the command was accepted (never a token: it may have expired).
    const identity = identityHeaders(this.#backend.config.forwardIdentity, { principal: entry.principal });
    const headers: Record<string, string> = { accept: 'application/json', ...this.#backend.config.headers, ...identity, [this.#backend.config.correlationHeader]: entry.id };
    if (entry.traceparent) headers.traceparent = entry.traceparent;
    return headers;
  }

  /**
   * The success event, when one is configured. The command did succeed, so a `data` mapping that
   * fails never turns it into a retry: it gives `{}`.
   */
  async #successEvents(entry: OutboxEntry, mapped: MappedCommand, exchange: CommandExchange): Promise<CloudEvent[]> {
    if (!mapped.success) return [];
    const input = { command: entry.command, data: entry.command.data, response: exchange.body, status: exchange.status };
    const data = mapped.success.data ? await mapped.success.data.evaluate(input).catch(() => undefined) : exchange.body;
    return [resultEvent({ type: mapped.success.type, source: this.#backend.config.source, correlationId: entry.id, data: asObject(data) })];
  }
}

function compile(command: LegacyCommandConfig): MappedCommand {
  const { success, failure } = command.events;
  return {
    method: command.request.method.toUpperCase(),
    path: compileTemplate(command.request.path),
    ...(command.request.body !== undefined && { body: compileExpression(command.request.body) }),
    ...(success && { success: { type: success.type, ...(success.data !== undefined && { data: compileExpression(success.data) }) } }),
    failureType: failure?.type ?? defaultFailureType(command.type),
  };
}

/** Event `data` is an object (PROTOCOL.md 2.5): anything else is wrapped as `{ value }`. */
function asObject(value: unknown): Record<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  return value === undefined ? {} : { value };
}
