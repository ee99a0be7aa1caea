/**
 * The registry and lifecycle across replicas (issue 23, item 1): two gateway processes on one Redis
 * prefix; what one registers, pauses, resumes or deletes, the other follows (README, "Several
 * replicas": within 1 s, by a change notice with a version check behind it).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { authorizePayment, post } from '../commands/support.ts';
import { closeAll, eventually, freePort, getJson, tempDir, track } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { ADMIN_AUTH, LOOPBACK_REGISTRY, send } from './support.ts';

afterEach(closeAll);

/** A gateway process on the shared Redis under `prefix`, with an admin key and a registry open to loopback; resolves with its base URL once ready. */
async function replica(prefix: string): Promise<string> {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }
commands: { dispatch: { retry: { schedule: [100ms] } } }
${LOOPBACK_REGISTRY}
${ADMIN_AUTH}
`);
  spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return base;
}

const ADMIN = 'admin-key';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `status` of service `id` on the replica at `base` (undefined when it answers 404). */
async function statusOn(base: string, id: string): Promise<string | undefined> {
  const answer = await send('GET', `${base}services/${id}`, undefined, ADMIN);
  return answer.status === 404 ? undefined : answer.body.status;
}

describe('two gateway processes on one Redis prefix share the registry and the lifecycle', () => {
  it('register, pause, resume and delete on one replica take effect on the other', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 0 }));
    const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
    const delivered = (id: unknown) => payments.events.some((event) => event.correlationid === id);

    // Registered on A: B lists it, routes commands to it and passes requests through to it.
    const registration = { id: 'pay', name: 'com.example.payments', endpoint: payments.endpoint };
    expect((await send('POST', `${a}services`, registration, ADMIN)).status).toBe(201);
    await eventually(async () => (await statusOn(b, 'pay')) === 'running', 10_000);
    expect((await getJson(`${b}services`, { headers: { 'x-api-key': ADMIN } })).body.services.map((s: { id: string }) => s.id)).toContain('pay');
    const first = authorizePayment();
    expect((await post(`${b}services/pay/commands`, first, { 'x-api-key': ADMIN })).status).toBe(201);
    await eventually(() => delivered(first.id), 20_000);

    // Paused on A: B says paused, and a command accepted on B waits in the shared outbox.
    expect((await send('POST', `${a}services/pay/pause`, undefined, ADMIN)).status).toBe(204);
    await eventually(async () => (await statusOn(b, 'pay')) === 'paused', 10_000);
    const held = authorizePayment();
    expect((await post(`${b}services/pay/commands`, held, { 'x-api-key': ADMIN })).status).toBe(201);
    // Both dispatchers look at the outbox at least once a second; neither may deliver it.
    await sleep(2_500);
    expect(delivered(held.id)).toBe(false);
    const outboxOf = async (base: string) => (await getJson(`${base}status`, { headers: { 'x-api-key': ADMIN } })).body.backends.find((s: { id: string }) => s.id === 'pay').outbox.depth;
    expect(await outboxOf(b)).toBe(1);

    // Resumed on A: B says running and the held command is delivered.
    expect((await send('POST', `${a}services/pay/resume`, undefined, ADMIN)).status).toBe(204);
    await eventually(async () => (await statusOn(b, 'pay')) === 'running', 10_000);
    await eventually(() => delivered(held.id), 20_000);

    // Paused again, a command held on B; deleted on A: B no longer knows the service, and the held
    // command ends with its failure event instead of staying in the outbox.
    expect((await send('POST', `${a}services/pay/pause`, undefined, ADMIN)).status).toBe(204);
    await eventually(async () => (await statusOn(b, 'pay')) === 'paused', 10_000);
    const orphan = authorizePayment();
    expect((await post(`${b}services/pay/commands`, orphan, { 'x-api-key': ADMIN })).status).toBe(201);
    expect((await send('DELETE', `${a}services/pay`, undefined, ADMIN)).status).toBe(204);
    await eventually(async () => (await statusOn(b, 'pay')) === undefined, 10_000);
    const failure = await eventually(async () => (await getJson(`${b}events?correlationId=${orphan.id}`, { headers: { 'x-api-key': ADMIN } })).body.events[0], 10_000);
    expect(failure).toMatchObject({ type: 'AuthorizePaymentFailedV1', data: { error: { code: 'SERVICE_NOT_FOUND' } } });
    expect(delivered(orphan.id)).toBe(false);
    expect((await post(`${b}services/pay/commands`, authorizePayment(), { 'x-api-key': ADMIN })).status).toBe(404);
  }, 180_000);
});
