/**
 * Correlation aliases across replicas (issue 23, item 3): a stream open on one gateway process
 * follows the backend's own id that the dispatcher of ANOTHER process learnt while it was open.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { authorizePayment, FAST_DISPATCH, ownIdBackend, post, protoBackend } from '../../commands/support.ts';
import { closeAll, eventually, freePort, tempDir, track } from '../../support/gateway.ts';
import { spawnGateway } from '../../support/process.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { openLive, type LiveStream } from './support.ts';

afterEach(closeAll);

/** A gateway process on the shared Redis under `prefix` with `backends` (YAML lines, may be empty) and `commands` settings; resolves with its base URL once ready. */
async function replica(prefix: string, backends: string, commands = FAST_DISPATCH): Promise<string> {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }
${commands}
${backends ? `backends:\n${backends}` : ''}`);
  spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return base;
}

describe('correlation aliases across gateway processes', () => {
  it('a stream open on B matches the backend\'s own id learnt by A\'s dispatcher, and closes on its terminal event', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const backend = await ownIdBackend('PaymentCompletedV1');
    // Only A knows the backend: A delivers the command and ingests the backend's events; B only streams.
    const [a, b] = await Promise.all([replica(prefix, protoBackend(backend.url, 'odd')), replica(prefix, '')]);
    const command = authorizePayment();
    const live = await openLive(`${b}events/stream?correlationId=${command.id}`);
    expect((await post(`${a}commands`, command)).status).toBe(201);
    const [record] = await live.events(1, 30_000);
    expect(JSON.parse(record.data)).toMatchObject({ correlationid: `own-${command.id}`, type: 'PaymentCompletedV1' });
    expect((await live.records.next()).done).toBe(true);
  }, 120_000);

  it('a stream open on B gets the backend\'s event that B\'s tail delivered before the alias notice arrived', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    let all: LiveStream | undefined;
    // The bad order, forced: the backend answers A (which then learns and announces the alias) only
    // once its event has gone through B's live tail, so B's stream below was offered it unmatched.
    const backend = await ownIdBackend('PaymentCompletedV1', { beforeAnswer: async (own) => void (await all?.eventsUntil(`evt-${own}`, 30_000)) });
    const patient = 'commands: { dispatch: { timeout: 60s, concurrency: 4, retry: { schedule: [50ms, 50ms] } } }';
    const [a, b] = await Promise.all([replica(prefix, protoBackend(backend.url, 'odd'), patient), replica(prefix, '', patient)]);
    const command = authorizePayment();
    all = await openLive(`${b}events/stream`);
    const live = await openLive(`${b}events/stream?correlationId=${command.id}`);
    expect((await post(`${a}commands`, command)).status).toBe(201);
    const [record] = await live.events(1, 30_000);
    expect(JSON.parse(record.data)).toMatchObject({ correlationid: `own-${command.id}`, type: 'PaymentCompletedV1' });
    expect((await live.records.next()).done).toBe(true);
  }, 120_000);
});
