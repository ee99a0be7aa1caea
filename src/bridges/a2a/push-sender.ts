/**
 * A2A push notifications (A2A 1.0 `TaskPushNotificationConfig`) delivered through the webhook
 * bridge's SSRF-guarded client, never an unguarded fetch: each task update is serialised by the
 * SDK's v1 serializer and POSTed to every config of the task, in order per task, with the config's
 * token (`X-A2A-Notification-Token`) and credentials (`Authorization`). A failed attempt is retried
 * after the first `MAX_RETRIES` delays of `webhooks.retry.schedule` (in process: a task update is
 * a live view, the events stay in the log). Bounded: at most `a2a.maxPendingPush` notifications
 * wait in this process, and at most `a2a.maxPendingPushPerPrincipal` of one principal's tasks (so
 * one caller's slow or dead endpoints never crowd out another's); more are dropped and counted.
 */
import type { StreamResponse, Task, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { V1PushNotificationSerializer, type PushNotificationSender, type PushNotificationStore, type ServerCallContext } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import type { DeliveryResponse } from '../../egress/delivery-client.ts';
import { judgeAttempt } from '../../egress/retry-policy.ts';
import { messagingAttributes, serverAttributes, SpanKind, startSpan, tracedAttempt, type Span } from '../../telemetry/tracing.ts';

/** Retries of one notification at most (the first entries of `webhooks.retry.schedule`). */
export const MAX_RETRIES = 3;
/** The header carrying a config's token (the SDK's default sender uses the same). */
const TOKEN_HEADER = 'X-A2A-Notification-Token';

/** What the sender needs. */
export interface GuardedPushSenderOptions {
  store: PushNotificationStore;
  /** Posts through the SSRF-guarded delivery client; never throws. */
  post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<DeliveryResponse>;
  /** `webhooks.retry.schedule`, in ms (only the first `MAX_RETRIES` entries are used). */
  retryScheduleMs: readonly number[];
  /** `a2a.maxPendingPush`: notifications waiting at most. */
  maxPending: number;
  /** `a2a.maxPendingPushPerPrincipal`: notifications of one principal's tasks waiting at most. */
  maxPendingPerPrincipal: number;
  /** Counts deliveries by outcome: `delivered`, `failed` (retries exhausted), `dropped` (a pending bound). */
  onOutcome(outcome: 'delivered' | 'failed' | 'dropped'): void;
  /** Counts a notification dropped by a pending bound: the principal's share or the whole queue. */
  onDropped?(limit: 'principal' | 'global'): void;
  logger: Logger;
}

/** The SDK's `PushNotificationSender`, over the guarded client. `close()` stops retries (idempotent). */
export class GuardedPushSender implements PushNotificationSender {
  readonly #options: GuardedPushSenderOptions;
  readonly #serializer = new V1PushNotificationSerializer();
  /** The tail of each task's delivery chain (keeps a task's notifications in order). */
  readonly #chains = new Map<string, Promise<void>>();
  readonly #stop = new AbortController();
  #pending = 0;
  /** Waiting notifications by the principal whose task they are about. */
  readonly #pendingOf = new Map<string, number>();

  constructor(options: GuardedPushSenderOptions) {
    this.#options = options;
  }

  /** Queues `update` for every push config of its task; returns without waiting for delivery. */
  async send(update: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const taskId = task?.id ?? taskIdOf(update);
    if (taskId === undefined || this.#stop.signal.aborted) return;
    const configs = await this.#options.store.load(taskId, context);
    if (configs.length === 0) return;
    const { body, contentType } = this.#serializer.serialize(update, task);
    const owner = context.user?.userName ?? 'unknown';
    const kind = update.payload?.$case ?? 'task';
    for (const config of configs) this.#enqueue(taskId, owner, config, kind, body, contentType);
  }

  /** Notifications waiting now, overall or of one principal's tasks. */
  pending(owner?: string): number {
    return owner === undefined ? this.#pending : this.#pendingOf.get(owner) ?? 0;
  }

  /** Stops waiting retries; attempts in flight are aborted. Idempotent. */
  close(): void {
    this.#stop.abort();
  }

  #enqueue(taskId: string, owner: string, config: TaskPushNotificationConfig, kind: string, body: string, contentType: string): void {
    const full: 'global' | 'principal' | undefined = this.#pending >= this.#options.maxPending ? 'global'
      : this.pending(owner) >= this.#options.maxPendingPerPrincipal ? 'principal' : undefined;
    if (full !== undefined) {
      this.#options.onOutcome('dropped');
      this.#options.onDropped?.(full);
      return;
    }
    this.#pending += 1;
    this.#pendingOf.set(owner, this.pending(owner) + 1);
    const previous = this.#chains.get(taskId) ?? Promise.resolve();
    const next = previous.then(() => this.#deliver(config, kind, body, contentType)).finally(() => {
      this.#pending -= 1;
      const left = this.pending(owner) - 1;
      if (left > 0) this.#pendingOf.set(owner, left);
      else this.#pendingOf.delete(owner);
      if (this.#chains.get(taskId) === next) this.#chains.delete(taskId);
    });
    this.#chains.set(taskId, next);
  }

  /** Posts one notification, retrying per the schedule; never throws. */
  async #deliver(config: TaskPushNotificationConfig, kind: string, body: string, contentType: string): Promise<void> {
    const schedule = this.#options.retryScheduleMs.slice(0, MAX_RETRIES);
    for (let attempt = 1; !this.#stop.signal.aborted; attempt++) {
      const headers = headersOf(config, contentType);
      const result = await tracedAttempt(pushSpan(config, kind, attempt), (traceparent) =>
        this.#options.post(config.url, traceparent === undefined ? headers : { ...headers, traceparent }, body, this.#stop.signal));
      const verdict = judgeAttempt(result, attempt, schedule, Date.now());
      if (verdict.kind === 'succeeded') return this.#options.onOutcome('delivered');
      if (verdict.outcome.status !== 'pending' || result.refusal !== undefined) break;
      await sleep((verdict.outcome.nextAttemptMs ?? Date.now()) - Date.now(), this.#stop.signal);
    }
    this.#options.logger.warn({ taskId: config.taskId, configId: config.id }, 'a2a push notification not delivered');
    this.#options.onOutcome('failed');
  }
}

/**
 * The span of one push attempt (`deliver a2a-push`, a producer span of its own trace, as a webhook
 * attempt's): the task, the update's kind, the target's host and port (never its URL, which may
 * hold a secret).
 */
function pushSpan(config: TaskPushNotificationConfig, kind: string, attempt: number): Span {
  return startSpan('deliver a2a-push', {
    kind: SpanKind.PRODUCER,
    root: true,
    attributes: () => ({
      ...messagingAttributes('send', 'deliver', config.taskId),
      'proto.delivery.transport': 'a2a-push',
      'proto.delivery.attempt': attempt,
      'proto.a2a.task.id': config.taskId,
      'proto.a2a.update': kind,
      'http.request.method': 'POST',
      ...serverAttributes(config.url),
    }),
  });
}

function headersOf(config: TaskPushNotificationConfig, contentType: string): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (config.token) headers[TOKEN_HEADER] = config.token;
  if (config.authentication?.scheme) headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials}`.trim();
  return headers;
}

function taskIdOf(update: StreamResponse): string | undefined {
  const payload = update.payload;
  if (payload === undefined) return undefined;
  if (payload.$case === 'task') return payload.value.id;
  if (payload.$case === 'message') return payload.value.taskId || undefined;
  return payload.value.taskId;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms));
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
