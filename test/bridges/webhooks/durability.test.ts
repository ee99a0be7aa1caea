/**
 * A gateway process on SQLite killed with SIGKILL while its webhook attempts are in flight: after a
 * restart, the deliveries it had claimed are claimed again when their lease runs out, and every
 * delivery arrives; only the interrupted attempts arrive twice.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../../examples/payments-service.ts';
import { closeAll, eventually, tempDir, track } from '../../support/gateway.ts';
import { claims, holdingReceiver, webhookGatewayProcess } from './support.ts';

afterEach(closeAll);

describe('webhook deliveries across a kill -9 of the gateway (sqlite)', () => {
  it('claims the interrupted deliveries again after their lease and delivers every one, only those twice', async () => {
    const storage = `{ driver: sqlite, path: ${join(tempDir(), 'gateway.db')} }`;
    const receiver = await holdingReceiver();
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const first = await webhookGatewayProcess(storage, payments.url);
    const created = await fetch(`${first.base}subscriptions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ webhook: { url: receiver.url } }),
    });
    expect(created.status).toBe(201);
    const count = 10;
    for (let i = 0; i < count; i++) payments.emit('PaymentRefundedV1', { orderId: `o-${i}` });
    await eventually(() => receiver.held() === 4, 30_000, 50);
    first.process.signal('SIGKILL');
    await first.process.exited;
    receiver.release();

    const second = await webhookGatewayProcess(storage, payments.url);
    await eventually(async () => new Set(receiver.arrivals).size === count && (await claims(second.base, 'reclaimed')) === 4, 60_000, 200);
    const perDelivery = new Map<string, number>();
    for (const id of receiver.arrivals) perDelivery.set(id, (perDelivery.get(id) ?? 0) + 1);
    expect([...perDelivery.values()].filter((n) => n === 2)).toHaveLength(4);
    expect([...perDelivery.values()].every((n) => n <= 2)).toBe(true);
  }, 120_000);
});
