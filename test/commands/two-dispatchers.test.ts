import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxEntry } from '../../src/commands/CommandStore.ts';
import { resultEvent, type CommandDelivery, type DeliveryOutcome } from '../../src/commands/delivery.ts';
import { Dispatcher } from '../../src/commands/dispatcher.ts';
import { RedisCommandStore } from '../../src/commands/redis-store.ts';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { commandMetrics } from '../../src/metrics/commands.ts';
import { eventually } from '../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { outboxEntry } from './store-contract.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('leased claims across replicas', () => {
  it('two dispatchers on one Redis outbox deliver every command exactly once', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const deliveredBy = new Map<string, string[]>();
    const replica = async (name: string) => {
      const store = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix });
      await store.open();
      const log = new MemoryEventLog();
      await log.open();
      const delivery: CommandDelivery = {
        async deliver(entry: OutboxEntry): Promise<DeliveryOutcome> {
          deliveredBy.set(entry.id, [...(deliveredBy.get(entry.id) ?? []), name]);
          // Slow enough that both replicas claim while the other has entries in flight.
          await new Promise((resolve) => setTimeout(resolve, 5));
          return { kind: 'delivered', events: [resultEvent({ type: 'OkV1', source: 'urn:test', correlationId: entry.id, data: {} })] };
        },
        async failureEvent(entry) {
          return resultEvent({ type: 'FailedV1', source: 'urn:test', correlationId: entry.id, data: {} });
        },
      };
      const dispatcher = new Dispatcher({
        outbox: store, aliases: store, log, deliveries: new Map([['orders', delivery]]),
        timeoutMs: 1_000, concurrency: 4, retryScheduleMs: [50], drainMs: 1_000,
        metrics: commandMetrics(new Registry()), logger: pino({ level: 'silent' }),
      });
      cleanups.push(async () => {
        await dispatcher.close();
        await store.close();
      });
      return { store, dispatcher };
    };
    const [a, b] = [await replica('a'), await replica('b')];
    for (let i = 0; i < 60; i++) await a.store.enqueue({ ...outboxEntry(`cmd-${i}`), nextAttemptMs: 0 });
    await Promise.all([a.dispatcher.start(), b.dispatcher.start()]);
    await eventually(async () => (await a.store.depth()) === 0, 20_000);
    expect(deliveredBy.size).toBe(60);
    expect([...deliveredBy.values()].filter((by) => by.length !== 1)).toEqual([]);
    const shares = [...deliveredBy.values()].flat();
    expect(shares.filter((n) => n === 'a').length + shares.filter((n) => n === 'b').length).toBe(60);
  });
});
