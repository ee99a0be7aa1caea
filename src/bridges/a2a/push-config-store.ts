/**
 * The SDK's `PushNotificationStore` over the gateway's task store: a task's push-notification
 * configs are kept with the task (in the shared store, so any replica posts to them, and forgotten
 * when the task is), bounded per task (`a2a.maxPushConfigsPerTask`) and per principal
 * (`a2a.maxPushConfigsPerPrincipal`) in one atomic step, never in an unbounded in-process map.
 *
 * A refusal by a bound is a catalogued 429 `QUOTA_EXCEEDED`. The SDK turns whatever a store throws
 * into an internal JSON-RPC error, so the refusal is also recorded against the call's context:
 * the bridge asks `refusalOf(context)` and answers it as the gateway's refusal (`jsonRpcRefusal`).
 */
import { randomUUID } from 'node:crypto';
import { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { PushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server';
import { ProtoError } from '../../errors.ts';
import type { GatewayTaskStore } from './open-task-store.ts';

/** What the store needs. */
export interface TaskStorePushConfigsOptions {
  tasks: GatewayTaskStore;
  maxPerTask: number;
  maxPerPrincipal: number;
  /** Counts a refusal by a bound (`proto_gateway_quota_refusals_total{quota="a2a.pushConfigs"}`). */
  refused(limit: 'task' | 'principal'): void;
}

/** The push configs of A2A tasks, in the task store. */
export class TaskStorePushConfigs implements PushNotificationStore {
  readonly #options: TaskStorePushConfigsOptions;
  readonly #refusals = new WeakMap<ServerCallContext, ProtoError>();

  constructor(options: TaskStorePushConfigsOptions) {
    this.#options = options;
  }

  /** Saves `config` for `taskId` (assigning an id when it has none), or throws the bound's refusal. */
  async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    if (!config.id) config.id = randomUUID();
    const json = JSON.stringify(TaskPushNotificationConfig.toJSON({ ...config, taskId }));
    const saved = await this.#options.tasks.savePushConfig(taskId, context, config.id, json);
    if (saved === 'saved') return;
    const { maxPerTask, maxPerPrincipal } = this.#options;
    const refusal = saved === 'task-full'
      ? new ProtoError('QUOTA_EXCEEDED', `a task has at most ${maxPerTask} push notification configs; delete one first`, { limit: 'a2a.maxPushConfigsPerTask', max: maxPerTask })
      : new ProtoError('QUOTA_EXCEEDED', `a caller has at most ${maxPerPrincipal} push notification configs over its tasks; delete one first`, { limit: 'a2a.maxPushConfigsPerPrincipal', max: maxPerPrincipal });
    this.#options.refused(saved === 'task-full' ? 'task' : 'principal');
    this.#refusals.set(context, refusal);
    throw refusal;
  }

  async load(taskId: string, context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    const stored = await this.#options.tasks.pushConfigs(taskId, context);
    return stored.map((json) => TaskPushNotificationConfig.fromJSON(JSON.parse(json)));
  }

  /** Deletes one config; without `configId`, the one whose id is the task's (the SDK's convention). */
  async delete(taskId: string, context: ServerCallContext, configId?: string): Promise<void> {
    await this.#options.tasks.deletePushConfig(taskId, context, configId ?? taskId);
  }

  /** The refusal a save of this call threw, if any. */
  refusalOf(context: ServerCallContext): ProtoError | undefined {
    return this.#refusals.get(context);
  }
}
