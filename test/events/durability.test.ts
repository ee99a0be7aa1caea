import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startOrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService } from '../../examples/payments-service.ts';
import type { EventLog } from '../../src/log/EventLog.ts';
import { closeAll, eventually, startTestGateway, tempDir, track } from '../support/gateway.ts';

afterEach(closeAll);

const launcher = fileURLToPath(new URL('../../bin/proto-gateway', import.meta.url));

function yaml(dir: string, paymentsUrl: string, ordersUrl?: string): string {
  const orders = ordersUrl
    ? `  - id: orders
    kind: legacy
    url: "${ordersUrl}"
    records:
      - path: /orders
        interval: 50ms
        types: [OrderCreatedV1, OrderShippedV1]
        cursor: { param: updatedSince, field: updatedAt }
        items: items
        event: { type: "Order{$pascal(status)}V1", id: "{id}:{updatedAt}", time: updatedAt }
`
    : '';
  return `server: { host: 127.0.0.1, port: 0 }
storage: { driver: sqlite, path: ${join(dir, 'gateway.db')} }
backends:
  - { id: payments, kind: proto, url: "${paymentsUrl}", events: { follow: poll, interval: 50ms } }
${orders}`;
}

/** Every event id in the log, in log order. */
async function allIds(log: EventLog): Promise<string[]> {
  const ids: string[] = [];
  let after = 0;
  for (;;) {
    const page = await log.query({}, after, 1000);
    ids.push(...page.events.map((e) => e.event.id));
    if (page.next === undefined) return ids;
    after = page.next;
  }
}

describe('durability of the log and its checkpoints', () => {
  it('survives a restart: events and checkpoints kept, nothing re-added', async () => {
    const dir = tempDir();
    const payments = track(await startPaymentsService({ port: 0 }));
    const orders = track(await startOrdersService({ port: 0 }));
    for (let i = 0; i < 30; i++) payments.emit('PaymentNoticedV1', { i });
    const first = await startTestGateway(yaml(dir, payments.url, orders.url), {}, join(dir, 'gateway.yaml'));
    await eventually(async () => (await first.log.count()) === 32);
    const before = await allIds(first.log);
    await first.close();

    const second = await startTestGateway(yaml(dir, payments.url, orders.url), {}, join(dir, 'gateway.yaml'));
    expect(await allIds(second.log)).toEqual(before);
    expect(await second.log.checkpoint('follow:payments')).toBeTypeOf('string');
    await new Promise((r) => setTimeout(r, 500));
    expect(await allIds(second.log)).toEqual(before);
    const next = payments.emit('PaymentNoticedV1', { i: 30 });
    await eventually(async () => (await second.log.count()) === 33);
    expect((await allIds(second.log)).slice(0, -1)).toEqual(before);
    expect((await allIds(second.log)).at(-1)).toBe(next.id);
  });

  it('loses nothing and doubles nothing when the gateway is killed with SIGKILL while ingesting', async () => {
    const dir = tempDir();
    const payments = track(await startPaymentsService({ port: 0 }));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, yaml(dir, payments.url));
    const emitted: string[] = [];
    const emitBatch = () => {
      for (let i = 0; i < 40; i++) emitted.push(payments.emit('PaymentNoticedV1', { n: emitted.length }).id);
    };
    for (let i = 0; i < 25; i++) emitBatch();
    const producer = setInterval(emitBatch, 20);
    try {
      const child = spawn(launcher, ['serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      // A fresh process loads every module first: on a loaded machine that alone can take 20 s.
      await eventually(() => out.includes('"msg":"listening"'), 60_000);
      // Let it ingest for a while, then kill it without warning.
      await new Promise((r) => setTimeout(r, 700));
      const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
    } finally {
      clearInterval(producer);
    }
    const restarted = await startTestGateway(yaml(dir, payments.url), {}, file);
    await eventually(async () => (await restarted.log.count()) === emitted.length, 20_000);
    const ids = await allIds(restarted.log);
    expect(ids).toHaveLength(emitted.length);
    expect(new Set(ids)).toEqual(new Set(emitted));
    expect(ids).toEqual(emitted);
  }, 120_000);

  it('keeps following a backend that restarted with a fresh log and refuses the stored cursor', async () => {
    const dir = tempDir();
    const first = await startPaymentsService({ port: 0 });
    const port = Number(new URL(first.url).port);
    // More than one page, so the gateway holds a cursor of the first instance.
    for (let i = 0; i < 150; i++) first.emit('PaymentNoticedV1', { generation: 1, i });
    const gw = await startTestGateway(yaml(dir, first.url), {}, join(dir, 'gateway.yaml'));
    await eventually(async () => (await gw.log.count()) === 150);
    expect(JSON.parse((await gw.log.checkpoint('follow:payments')) as string).cursor).toBeTypeOf('string');
    await first.close();
    const second = track(await startPaymentsService({ port }));
    const fresh = second.emit('PaymentNoticedV1', { generation: 2 });
    await eventually(async () => (await gw.log.positionOf(fresh.id)) !== undefined);
    expect(await gw.log.count()).toBe(151);
  });
});
