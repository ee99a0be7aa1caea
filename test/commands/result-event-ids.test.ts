import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxEntry } from '../../src/commands/CommandStore.ts';
import { resultEvent, resultEventId, type CommandDelivery, type DeliveryOutcome } from '../../src/commands/delivery.ts';
import { Dispatcher } from '../../src/commands/dispatcher.ts';
import { MemoryCommandStore } from '../../src/commands/memory-store.ts';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { commandMetrics } from '../../src/metrics/commands.ts';
import { eventually } from '../support/gateway.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A backend adapter that takes every command and answers with one success event built by `resultEvent`. */
function acceptingDelivery(): CommandDelivery & { calls: number } {
  return {
    calls: 0,
    async deliver(entry: OutboxEntry): Promise<DeliveryOutcome> {
      this.calls += 1;
      return { kind: 'delivered', events: [resultEvent({ type: 'OrderPlacedV1', source: 'urn:test:shop', correlationId: entry.id, data: { ok: true } })] };
    },
    async failureEvent(entry) {
      return resultEvent({ type: 'PlaceOrderFailedV1', source: 'urn:test:shop', correlationId: entry.id, data: {} });
    },
  };
}

function dispatcher(store: MemoryCommandStore, log: MemoryEventLog, delivery: CommandDelivery, outbox = store) {
  const d = new Dispatcher({
    outbox,
    aliases: store,
    log,
    deliveries: new Map([['shop', delivery]]),
    timeoutMs: 1_000,
    concurrency: 1,
    retryScheduleMs: [50],
    drainMs: 1_000,
    // Short, so the restarted dispatcher finds the crashed one's claim expired soon.
    leaseMs: 100,
    metrics: commandMetrics(new Registry()),
    logger: pino({ level: 'silent' }),
  });
  closers.push(() => d.close());
  return d;
}

describe('result events exactly once', () => {
  it('gives a result event the UUIDv5 of its command id and outcome: the same on every re-delivery, distinct per outcome', () => {
    const success = resultEvent({ type: 'OrderPlacedV1', source: 'urn:s', correlationId: 'cmd-1', data: {} });
    expect(success.id).toBe(resultEventId('cmd-1', 'OrderPlacedV1'));
    expect(success.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(resultEvent({ type: 'OrderPlacedV1', source: 'urn:s', correlationId: 'cmd-1', data: {} }).id).toBe(success.id);
    expect(resultEventId('cmd-1', 'PlaceOrderFailedV1')).not.toBe(success.id);
    expect(resultEventId('cmd-2', 'OrderPlacedV1')).not.toBe(success.id);
  });

  it('appends one result event when the gateway crashes between appending it and completing the outbox entry', async () => {
    const store = new MemoryCommandStore();
    const log = new MemoryEventLog();
    await store.open();
    await log.open();
    const command = { specversion: '1.0', id: 'cmd-crash', source: 'urn:test:client', type: 'PlaceOrder', datacontenttype: 'application/json', time: new Date().toISOString(), data: { sku: 'a', qty: 1 } };
    await store.enqueue({ id: command.id, backend: 'shop', command, principal: 'anonymous', acceptedMs: Date.now(), attempts: 0, nextAttemptMs: 0 });

    // The first process appends the result event, then dies before `complete` (the injected crash).
    let crashed = false;
    const crashingOutbox = new Proxy(store, {
      get(target, name) {
        if (name === 'complete') {
          return async () => {
            crashed = true;
            throw new Error('process killed before the outbox entry was completed');
          };
        }
        const value = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const firstDelivery = acceptingDelivery();
    const first = dispatcher(store, log, firstDelivery, crashingOutbox);
    await first.start();
    await eventually(async () => crashed);
    // Killed: it does nothing more (left running, it claimed the entry again once its lease ran out
    // and delivered it a third time when the machine was slow to start the second).
    await first.close();
    expect((await store.depth())).toBe(1);

    // The restarted process finds the entry still in the outbox once the crashed claim's lease ran out, and delivers it again (at least once).
    const secondDelivery = acceptingDelivery();
    await dispatcher(store, log, secondDelivery).start();
    await eventually(async () => (await store.depth()) === 0);
    expect(firstDelivery.calls + secondDelivery.calls).toBe(2);
    const page = await log.query({ correlationIds: [command.id] }, 0, 10);
    expect(page.events.map((e) => e.event.type)).toEqual(['OrderPlacedV1']);
  });
});
