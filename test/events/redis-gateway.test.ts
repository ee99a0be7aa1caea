import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { openLive } from '../bridges/sse/support.ts';
import { authorizePayment, post } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';

afterEach(closeAll);

/** A gateway on the shared Redis under `prefix`, with the payments example behind it when its URL is given. */
async function gatewayOnRedis(prefix: string, paymentsUrl?: string) {
  return startTestGateway(
    gatewayYaml(
      paymentsUrl ? `backends:\n  - id: payments\n    kind: proto\n    url: "${paymentsUrl}"\n    events: { follow: stream, interval: 100ms }` : '',
      `storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`,
    ),
  );
}

describe('a gateway on storage.driver redis', () => {
  it('round-trips a command, its result event and a spontaneous event, streamed over SSE', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const gw = await gatewayOnRedis(prefix, payments.url);
    const command = authorizePayment();
    const live = await openLive(`${gw.url}events/stream?correlationId=${command.id}`);
    const accepted = await post(`${gw.url}services/payments/commands`, command);
    expect(accepted.status).toBe(201);
    const [record] = await live.events(1, 20_000);
    expect(JSON.parse(record.data)).toMatchObject({ correlationid: command.id });
    live.close();

    const emitted = payments.emit('PaymentRefundedV1', { orderId: 'o-9' });
    const stored = await eventually(async () => (await getJson(`${gw.url}events?type=PaymentRefundedV1`)).body.events[0], 20_000);
    expect(stored.id).toBe(emitted.id);
    // Every store's commands were timed: scripts (the accept, the append) among them.
    const metrics = await (await fetch(`${gw.url}metrics`)).text();
    expect(metrics).toMatch(/proto_gateway_redis_command_duration_seconds_count\{command="evalsha"\} [1-9]/);
    expect(metrics).toMatch(/proto_gateway_redis_command_duration_seconds_count\{command="xread"\} [1-9]/);
    // The command store's connection too (hkeys: only it sends one, for the outbox's backends at start).
    expect(metrics).toMatch(/proto_gateway_redis_command_duration_seconds_count\{command="hkeys"\} [1-9]/);
  }, 60_000);

  it('streams from one replica what was appended through another on the same prefix', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const first = await gatewayOnRedis(prefix, payments.url);
    // The second replica follows no backend: it can only have the result event from the shared log.
    const second = await gatewayOnRedis(prefix);
    const command = authorizePayment();
    const live = await openLive(`${second.url}events/stream?correlationId=${command.id}`);
    expect((await post(`${first.url}services/payments/commands`, command)).status).toBe(201);
    const [record] = await live.events(1, 20_000);
    expect(JSON.parse(record.data)).toMatchObject({ correlationid: command.id });
    live.close();
  }, 60_000);
});
