import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleBackends } from '../commands/support.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway, tempDir } from '../support/gateway.ts';
import { LOOPBACK_REGISTRY, send } from './support.ts';

afterEach(closeAll);

describe('runtime services across a restart (sqlite)', () => {
  it('are restored from the store, routed again, and a pause stays in force', async () => {
    const { payments } = await exampleBackends();
    const file = join(tempDir(), 'gateway.yaml');
    const yaml = gatewayYaml(LOOPBACK_REGISTRY, 'storage: { driver: sqlite, path: ./data/gateway.db }');
    const first = await startTestGateway(yaml, {}, file);
    await send('POST', `${first.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url, metadata: { n: 1 } });
    await send('POST', `${first.url}services`, { id: 'agent', name: 'com.test.agent' });
    expect((await send('POST', `${first.url}services/pay/pause`)).status).toBe(204);
    const before = (await getJson(`${first.url}services`)).body.services;
    await first.close();

    const second = await startTestGateway(yaml, {}, file);
    const after = (await getJson(`${second.url}services`)).body.services;
    const rebase = (services: unknown) => JSON.parse(JSON.stringify(services).split(first.url).join(second.url));
    expect(after).toEqual(rebase(before));
    expect(after.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([['pay', 'paused'], ['agent', 'stopped']]);
    expect((await getJson(`${second.url}services/pay/commands`)).body.commands.length).toBeGreaterThan(0);
    expect((await getJson(`${second.url}services/pay/refunds`)).body).toEqual({ refunds: [] });
    expect((await send('POST', `${second.url}services/pay/resume`)).status).toBe(204);
    expect((await getJson(`${second.url}services/pay`)).body.status).toBe('running');
  });

  it('are checked by the guard again: an endpoint now outside registry.allowNetworks is listed stopped, not routed to', async () => {
    const { payments } = await exampleBackends();
    const file = join(tempDir(), 'gateway.yaml');
    const storage = 'storage: { driver: sqlite, path: ./data/gateway.db }';
    const first = await startTestGateway(gatewayYaml(LOOPBACK_REGISTRY, storage), {}, file);
    await send('POST', `${first.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url });
    await first.close();
    const second = await startTestGateway(gatewayYaml('registry: { allowNetworks: [10.0.0.0/8] }', storage), {}, file);
    expect((await getJson(`${second.url}services/pay`)).body).toMatchObject({ id: 'pay', status: 'stopped' });
    expect((await getJson(`${second.url}services/pay/refunds`)).status).toBe(404);
  });

  it('are gone after a restart once deleted', async () => {
    const file = join(tempDir(), 'gateway.yaml');
    const yaml = gatewayYaml(LOOPBACK_REGISTRY, 'storage: { driver: sqlite, path: ./data/gateway.db }');
    const first = await startTestGateway(yaml, {}, file);
    await send('POST', `${first.url}services`, { id: 'agent', name: 'com.test.agent' });
    await send('DELETE', `${first.url}services/agent`);
    await first.close();
    const second = await startTestGateway(yaml, {}, file);
    expect((await getJson(`${second.url}services`)).body.services).toEqual([]);
  });
});
