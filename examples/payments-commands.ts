/**
 * How the example payments service accepts a command (PROTOCOL-NOTES.md, Commands): envelope check
 * → catalogue lookup by `type` → `dataschema` check → validation of `data` (ajv) → idempotency by
 * `id`. Each step is one function that throws a `Refusal` carrying the protocol's error code; the
 * service's router turns it into the error body. Also decides which event a command results in.
 */
import { randomUUID } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isObject } from './support/http-kit.ts';
import { authorizationLimit, commands, type CommandEntry } from './payments-catalogue.ts';

/** Command ids remembered for idempotency; the oldest is forgotten beyond this. */
const maxRememberedCommands = 10_000;

/** A refusal with the protocol's error code and HTTP status. */
export class Refusal extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: object;
  constructor(status: number, code: string, message: string, details?: object) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** The command envelope after its check. */
export interface CommandEnvelope {
  id: string;
  source: string;
  type: string;
  dataschema: string;
  data: Record<string, unknown>;
}

/** What accepting commands needs across requests: compiled validators and the ids seen. */
export interface CommandDesk {
  validators: Map<string, ValidateFunction>;
  /** Command id → fingerprint of its payload. */
  seen: Map<string, string>;
}

/** The outcome of a command that passed every check; `repeat` = already accepted before. */
export interface AcceptedCommand {
  command: CommandEnvelope;
  repeat: boolean;
}

/** A desk with every catalogue schema compiled once (defaults filled in, every error reported). */
export function createCommandDesk(): CommandDesk {
  const ajv = new Ajv({ allErrors: true, useDefaults: true });
  return { validators: new Map(commands.map((entry) => [entry.type, ajv.compile(entry.jsonSchema)])), seen: new Map() };
}

/** The envelope of a command, or a 400 naming the first field that is wrong. */
function checkEnvelope(body: unknown): CommandEnvelope {
  const invalid = (message: string): Refusal => new Refusal(400, 'INVALID_ENVELOPE', message);
  if (!isObject(body)) throw invalid('the command must be a JSON object');
  if (body.specversion !== '1.0') throw invalid('specversion must be "1.0"');
  // dataschema is required on commands (PROTOCOL.md 2.5, rule 6).
  for (const field of ['id', 'source', 'type', 'dataschema'] as const) {
    if (typeof body[field] !== 'string' || body[field] === '') throw invalid(`${field} is required (a non-empty string)`);
  }
  if (body.datacontenttype !== undefined && body.datacontenttype !== 'application/json') throw invalid('datacontenttype must be "application/json"');
  if (body.time !== undefined && (typeof body.time !== 'string' || Number.isNaN(Date.parse(body.time)))) throw invalid('time must be an ISO 8601 time');
  if (!isObject(body.data)) throw invalid('data must be a JSON object');
  return body as unknown as CommandEnvelope;
}

/** The catalogue entry of a command type, or a 422. */
function commandEntryOf(type: string): CommandEntry {
  const entry = commands.find((candidate) => candidate.type === type);
  if (!entry) throw new Refusal(422, 'UNKNOWN_COMMAND_TYPE', `this service does not accept ${type}`);
  return entry;
}

/** `dataschema` must name the type's own catalogue entry, absolute or as `{schema}/{version}`; it is never fetched. */
function checkDataschema(dataschema: string, entry: CommandEntry): void {
  const relative = `${entry.schema}/${entry.version}`;
  if (dataschema !== relative && !dataschema.endsWith(`/commands/${relative}`)) {
    throw new Refusal(400, 'DATASCHEMA_MISMATCH', `dataschema must name ${relative}`);
  }
}

/** An ajv error as `{ path, message }`, `path` a JSON Pointer into `data`. */
function describeError(error: ErrorObject): { path: string; message: string } {
  const missing = error.keyword === 'required' ? `/${(error.params as { missingProperty: string }).missingProperty}` : '';
  return { path: `${error.instancePath}${missing}` || '/', message: error.message ?? 'is invalid' };
}

/** Validates (and fills defaults into) `data` in place, or a 400 listing every error. */
function validateData(validate: ValidateFunction, type: string, data: Record<string, unknown>): void {
  if (!validate(data)) {
    throw new Refusal(400, 'VALIDATION_FAILED', `data is not a valid ${type}`, { errors: (validate.errors ?? []).map(describeError) });
  }
}

/** True when `id` was already accepted with this payload; another payload under it is a 409. */
function isRepeat(seen: Map<string, string>, id: string, payload: unknown): boolean {
  const fingerprint = JSON.stringify(payload);
  const previous = seen.get(id);
  if (previous === undefined) {
    seen.set(id, fingerprint);
    if (seen.size > maxRememberedCommands) seen.delete(seen.keys().next().value!);
    return false;
  }
  if (previous !== fingerprint) throw new Refusal(409, 'DUPLICATE_COMMAND', `command ${id} was already submitted with another payload`);
  return true;
}

/** Runs a submitted body through every check; throws a `Refusal` at the first that fails. */
export function acceptCommand(desk: CommandDesk, body: unknown): AcceptedCommand {
  const command = checkEnvelope(body);
  const entry = commandEntryOf(command.type);
  checkDataschema(command.dataschema, entry);
  // Idempotency compares what the caller sent, before validation fills in defaults.
  const payload = [command.type, structuredClone(command.data)];
  validateData(desk.validators.get(entry.type)!, entry.type, command.data);
  return { command, repeat: isRepeat(desk.seen, command.id, payload) };
}

/** The event a command results in: declined above the authorization limit, else authorized or refunded. */
export function resultOf(command: CommandEnvelope): { type: string; data: Record<string, unknown> } {
  const { orderId, amount, currency, reason } = command.data;
  if (command.type === 'RefundPayment') return { type: 'PaymentRefundedV1', data: { orderId, amount, currency, ...(reason !== undefined && { reason }) } };
  if ((amount as number) > authorizationLimit) {
    return { type: 'PaymentDeclinedV1', data: { orderId, amount, currency, reason: `amount exceeds the limit of ${authorizationLimit}` } };
  }
  return { type: 'PaymentAuthorizedV1', data: { paymentId: randomUUID(), orderId, amount, currency } };
}
