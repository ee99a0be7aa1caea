/**
 * A Redis that answers but refuses writes for a passing reason (issue 23, item 4): memory full
 * (`maxmemory 1mb`, `OOM`) and a server turned into a replica while the gateway writes to it
 * (`REPLICAOF`, `READONLY`). Under load, a gateway process answers every refused write with
 * `503 STORE_UNAVAILABLE` and `Retry-After`, never a 500, and keeps running.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ordersBackend, placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, freePort, getJson, tempDir, track } from '../support/gateway.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';
import { PrivateRedis, randomPrefix } from '../support/redis.ts';
import { ADMIN_AUTH, LOOPBACK_REGISTRY, send } from '../registry/support.ts';

afterEach(closeAll);

const ADMIN = { 'x-api-key': 'admin-key' };

/** A private redis-server with `args`, disposed after the test. */
async function privateRedis(args: string[] = []): Promise<PrivateRedis> {
  const server = await PrivateRedis.start(args);
  track({ close: () => server.dispose() });
  return server;
}

/** A gateway process on `redisUrl` with a legacy backend taking commands; resolves once ready. */
async function gatewayOn(redisUrl: string): Promise<{ base: string; process: GatewayProcess }> {
  const backend = await scriptedBackend((_req, res) => sendJson(res, 201, { ok: true }));
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${redisUrl}", prefix: "${randomPrefix()}" }
webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8] }
${LOOPBACK_REGISTRY}
${ADMIN_AUTH}
backends:
${ordersBackend(backend.url)}`);
  const process = spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return { base, process };
}

/** One round of writes on every kind of write route; resolves with the answers' statuses and bodies. */
async function writeRound(base: string) {
  const requests = [
    ...Array.from({ length: 20 }, () => post(`${base}commands`, placeOrder(), ADMIN)),
    post(`${base}subscriptions`, { webhook: { url: 'http://127.0.0.1:9/hook' } }, ADMIN),
    send('POST', `${base}services`, { id: `svc-${Math.floor(Math.random() * 1e6)}`, name: 'com.test.svc' }, 'admin-key'),
    send('POST', `${base}services/orders/pause`, undefined, 'admin-key'),
    getJson(`${base}events`, { headers: ADMIN }),
  ];
  return Promise.all(requests);
}

/** Asserts that every answer is a success or a 503 STORE_UNAVAILABLE with Retry-After, and that some were refused. */
function expectRefusedNotBroken(answers: Array<{ status: number; headers: Headers; body: any }>): void {
  for (const answer of answers) {
    expect(answer.status, JSON.stringify(answer.body)).not.toBe(500);
    if (answer.status === 503) {
      expect(answer.body.error.code).toBe('STORE_UNAVAILABLE');
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.body.error.message).not.toContain('nothing was stored');
      expect(answer.body.error.message).toContain('same id');
    } else {
      expect(answer.status).toBeLessThan(300);
    }
  }
  expect(answers.some((answer) => answer.status === 503)).toBe(true);
}

describe('a Redis refusing writes for a passing reason', () => {
  it('memory full (maxmemory 1mb, OOM): 503 STORE_UNAVAILABLE on every write route, no 500, the process lives', async () => {
    const redis = await privateRedis(['--maxmemory-policy', 'noeviction']);
    const gateway = await gatewayOn(redis.url);
    const rounds = [writeRound(gateway.base)];
    // Full under load: the limit drops below what the server already holds.
    const admin = new Redis(redis.url);
    track({ close: async () => void admin.disconnect() });
    await admin.config('SET', 'maxmemory', '1mb');
    rounds.push(writeRound(gateway.base), writeRound(gateway.base));
    const answers = (await Promise.all(rounds)).flat();
    expectRefusedNotBroken(answers);
    // Reads still work, and the process is alive and serving.
    expect((await getJson(`${gateway.base}events`, { headers: ADMIN })).status).toBe(200);
    expect((await fetch(`${gateway.base}healthz`)).status).toBe(200);
    expect(gateway.process.child.exitCode).toBeNull();
  }, 120_000);

  it('turned into a replica under load (REPLICAOF, READONLY): 503 STORE_UNAVAILABLE, no 500, the process lives', async () => {
    const primary = await privateRedis();
    const redis = await privateRedis();
    const gateway = await gatewayOn(redis.url);
    const rounds = [writeRound(gateway.base)];
    const admin = new Redis(redis.url);
    track({ close: async () => void admin.disconnect() });
    await admin.call('REPLICAOF', '127.0.0.1', String(primary.port));
    await eventually(async () => (await admin.info('replication')).includes('master_link_status:up'), 20_000, 100);
    rounds.push(writeRound(gateway.base), writeRound(gateway.base));
    const answers = (await Promise.all(rounds)).flat();
    expectRefusedNotBroken(answers);
    expect((await fetch(`${gateway.base}healthz`)).status).toBe(200);
    expect(gateway.process.child.exitCode).toBeNull();
  }, 120_000);
});
