/**
 * Command ingestion (`POST /commands`, `POST /services/{id}/commands`): a chain of small steps,
 * assembled once at boot from the configuration (STYLE.md rules 2 and 3), in the order of checks of
 * DESIGN.md and the issue: rate limit (before the body is read) → body → envelope → catalogue
 * lookup → `dataschema` → validation of `data` → idempotency and durable outbox (one transaction)
 * → `201 { id }`. Each step has one job and throws a catalogued `ProtoError` to refuse.
 */
import type { Principal } from '../edge/credentials.ts';
import { NOBODY, type AccessRules } from '../edge/access-rules.ts';
import type { CommandCatalogue, CommandEntry } from '../catalogue/command-catalogue.ts';
import { describeProblems } from '../catalogue/schema-compiler.ts';
import { isProtoError, ProtoError } from '../errors.ts';
import type { CommandMetrics } from '../metrics/commands.ts';
import type { CommandAnswer, CommandStore, IdempotencyRecord } from './CommandStore.ts';
import { matchDataschema } from './dataschema.ts';
import { checkCommandEnvelope, type CommandEnvelope } from './envelope.ts';
import { commandFingerprint } from './fingerprint.ts';
import { GroupCommitter, type AcceptHandoff } from './group-commit.ts';
import type { PrincipalRateLimit } from './rate-limit.ts';
import { annotate, failSpan, messagingAttributes, SpanKind, startSpan, traceparentOf, type Span } from '../telemetry/tracing.ts';

/** One submission as the HTTP edge hands it over. */
export interface Submission {
  /** The authenticated principal's id. */
  principal: string;
  /** The backend id of a per-service submission (`/services/{id}/commands`). */
  service?: string;
  /** Reads the JSON body within the server's limits (throws 413 / 400). */
  readBody(): Promise<unknown>;
  /** W3C trace context to carry to the backend. */
  traceparent?: string;
  /**
   * The admitted caller, for per-caller catalogues (`access`): a command it may not see is refused
   * as unknown. Without it, only commands without `access` are accepted (fail closed).
   */
  caller?: Principal;
}

/** What the caller gets: the first answer to this command id (`replayed` when it is a repeat). */
export interface IngestionAnswer extends CommandAnswer {
  replayed: boolean;
}

/** The state of one submission as it moves through the steps. */
interface Draft {
  submission: Submission;
  nowMs: number;
  body?: unknown;
  envelope?: CommandEnvelope;
  entry?: CommandEntry;
  /** The normalised `dataschema`. */
  dataschema?: string;
  answer?: IngestionAnswer;
  /** The accept's span (the API's no-op when tracing is off); its context is stored with the outbox entry. */
  span: Span;
}

/** One step: checks or records something about the draft, or throws a refusal. */
type Step = (draft: Draft) => void | Promise<void>;

/** What the pipeline is built from. */
export interface IngestionOptions {
  catalogue: CommandCatalogue;
  /** Per-caller catalogues (`access`); absent = every command is open to every writer. */
  access?: AccessRules;
  store: CommandStore;
  /** `commands.idempotencyWindow`, in ms. */
  idempotencyWindowMs: number;
  /** Absent or disabled: no rate limit step. */
  rateLimiter?: PrincipalRateLimit;
  metrics: CommandMetrics;
  /** Told after a command entered the outbox unclaimed (wakes the dispatcher). */
  onEnqueued(backend: string): void;
  /** The local dispatcher, which takes new commands claimed in their accept's commit (`group-commit.ts`); absent: every command is enqueued unclaimed. */
  handoff?: AcceptHandoff;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** The assembled pipeline. */
export interface CommandIngestion {
  /** Runs a submission through every step; resolves with the answer or throws the first refusal. */
  submit(submission: Submission): Promise<IngestionAnswer>;
}

/** Assembles the steps once. */
export function createIngestion(options: IngestionOptions): CommandIngestion {
  const steps: Step[] = [
    // Present even while off: a reload can turn the limit on (`take` returns at once while it is off).
    ...(options.rateLimiter ? [rateLimitStep(options.rateLimiter)] : []),
    readBodyStep,
    envelopeStep,
    lookupStep(options.catalogue, options.access),
    dataschemaStep(options.catalogue),
    validationStep,
    requestStep,
    enqueueStep(options),
  ];
  const now = options.now ?? Date.now;
  return {
    async submit(submission) {
      const draft: Draft = { submission, nowMs: now(), span: startSpan('accept', { kind: SpanKind.PRODUCER }) };
      try {
        // Only an asynchronous step is awaited: an await of a synchronous step's undefined still costs a turn of the microtask queue.
        for (const step of steps) {
          const pending = step(draft);
          if (pending) await pending;
        }
      } catch (err) {
        const outcome = isProtoError(err) ? err.code.toLowerCase() : 'internal';
        options.metrics.countSubmission(draft.entry?.type, outcome);
        // A refusal is an outcome of the accept; only a failure of the gateway is an error.
        if (!isProtoError(err) || err.status >= 500) failSpan(draft.span, err);
        endAccept(draft, outcome);
        throw err;
      }
      const answer = draft.answer!;
      const outcome = answer.replayed ? 'replayed' : 'accepted';
      options.metrics.countSubmission(draft.entry?.type, outcome);
      endAccept(draft, outcome);
      return answer;
    },
  };
}

/** Ends the accept's span with what is known of the command (`proto.command.*`, messaging conventions). */
function endAccept(draft: Draft, outcome: string): void {
  const backend = draft.entry?.backend;
  annotate(draft.span, () => ({
    ...messagingAttributes('send', 'accept', backend ?? 'unknown'),
    'proto.command.outcome': outcome,
    ...(draft.envelope && { 'proto.command.id': draft.envelope.id, 'proto.command.type': draft.envelope.type, 'messaging.message.id': draft.envelope.id }),
    ...(backend !== undefined && { 'proto.backend': backend }),
  }));
  if (backend !== undefined && draft.span.isRecording()) draft.span.updateName(`accept ${backend}`);
  draft.span.end();
}

function rateLimitStep(limiter: PrincipalRateLimit): Step {
  return (draft) => limiter.take(draft.submission.principal);
}

async function readBodyStep(draft: Draft): Promise<void> {
  draft.body = await draft.submission.readBody();
}

function envelopeStep(draft: Draft): void {
  draft.envelope = checkCommandEnvelope(draft.body);
}

/** The catalogue entry of the type; per service, only that service's types are accepted. */
function lookupStep(catalogue: CommandCatalogue, access: AccessRules | undefined): Step {
  return (draft) => {
    const { type } = draft.envelope!;
    const { service, caller } = draft.submission;
    const found = catalogue.byType(type);
    // A command the caller may not see is absent for it: the same answers as an unknown type.
    const entry = found && access && !access.command(caller ?? NOBODY, found) ? undefined : found;
    if (service !== undefined && entry?.backend !== service) {
      throw new ProtoError('COMMAND_NOT_ACCEPTED', `service "${service}" does not accept ${type}`, { type, service });
    }
    if (!entry) throw new ProtoError('UNKNOWN_COMMAND_TYPE', `no command type ${type} in the catalogue`, { type });
    draft.entry = entry;
  };
}

function dataschemaStep(catalogue: CommandCatalogue): Step {
  return (draft) => {
    draft.dataschema = matchDataschema(draft.envelope!.dataschema, draft.entry!, catalogue);
  };
}

function validationStep(draft: Draft): void {
  const errors = draft.entry!.validate(draft.envelope!.data);
  if (errors.length > 0) throw new ProtoError('VALIDATION_FAILED', describeProblems(`data is not a valid ${draft.entry!.type}`, errors), { errors });
}

/** The request the command would make must be one the backend can be sent (legacy path templates). */
async function requestStep(draft: Draft): Promise<void> {
  const check = draft.entry!.checkRequest;
  if (!check) return;
  const errors = await check(draft.envelope as unknown as Record<string, unknown>);
  if (errors.length > 0) throw new ProtoError('VALIDATION_FAILED', describeProblems(`data cannot fill the request of ${draft.entry!.type}`, errors), { errors });
}

/**
 * Idempotency and the outbox in one store transaction: a new id is stored with its outbox entry; a
 * live id replays its first answer when principal and fingerprint match, and is a 409 otherwise.
 * Accepts arriving during a commit share the next one (group commit, `group-commit.ts`), which
 * also claims each new command for the local dispatcher while it has room.
 */
function enqueueStep(options: IngestionOptions): Step {
  const committer = new GroupCommitter(options.store, options.handoff);
  return async (draft) => {
    const envelope = draft.envelope!;
    const { principal } = draft.submission;
    // The dispatch attempts, which run later in traces of their own, link to the accept through this.
    const traceparent = traceparentOf(draft.span) ?? draft.submission.traceparent;
    const record: IdempotencyRecord = {
      id: envelope.id,
      principal,
      fingerprint: commandFingerprint({ type: envelope.type, source: envelope.source, dataschema: draft.dataschema!, data: envelope.data }),
      answer: { status: 201, body: { id: envelope.id } },
      expiresMs: draft.nowMs + options.idempotencyWindowMs,
    };
    const entry = {
      id: envelope.id, backend: draft.entry!.backend, command: envelope, principal,
      acceptedMs: draft.nowMs, attempts: 0, nextAttemptMs: draft.nowMs, ...(traceparent !== undefined && { traceparent }),
    };
    const committed = await committer.accept(record, entry, draft.nowMs);
    if ('holder' in committed) {
      draft.answer = replay(committed.holder, record);
      return;
    }
    draft.answer = { ...record.answer, replayed: false };
    // A claimed command is already in the dispatcher's hands.
    if (!committed.claimed) options.onEnqueued(entry.backend);
  };
}

/** The first answer, when the repeat is the same command from the same principal; else a 409. */
function replay(holder: IdempotencyRecord, repeat: IdempotencyRecord): IngestionAnswer {
  if (holder.principal !== repeat.principal) {
    throw new ProtoError('DUPLICATE_COMMAND', `command id ${repeat.id} is already in use`, { id: repeat.id });
  }
  if (holder.fingerprint !== repeat.fingerprint) {
    throw new ProtoError('DUPLICATE_COMMAND', `command ${repeat.id} was already submitted with another payload`, { id: repeat.id });
  }
  return { ...holder.answer, replayed: true };
}
