import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway, tempDir } from '../support/gateway.ts';
import { ordersBackend, placeOrder, post, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

/** A sqlite gateway in front of the legacy backend at `url`. */
function durableYaml(dbPath: string, url: string, retry = '[1500ms]', shutdown = '10s') {
  return gatewayYaml(
    `server: { host: 127.0.0.1, port: 0, shutdownTimeout: ${shutdown} }
commands: { dispatch: { timeout: 500ms, retry: { schedule: ${retry} } } }
backends:
${ordersBackend(url)}`,
    `storage: { driver: sqlite, path: ${dbPath} }`,
  ).replace('server: { host: 127.0.0.1, port: 0 }\n', '');
}

describe('the durable outbox', () => {
  it('keeps commands accepted while the backend is down across a restart, then delivers each once', async () => {
    const dbPath = join(tempDir(), 'gateway.db');
    const port = await freePort();
    const first = await startTestGateway(durableYaml(dbPath, `http://127.0.0.1:${port}`));
    const commands = [placeOrder({ sku: 'a', qty: 1 }), placeOrder({ sku: 'b', qty: 2 }), placeOrder({ sku: 'c', qty: 3 })];
    for (const command of commands) expect((await post(`${first.url}commands`, command)).status).toBe(201);
    // The first try fails (connection refused); the retry is due after the restart.
    await eventually(async () => /proto_gateway_command_retries_total\{backend="orders"\} 3/.test(await (await fetch(`${first.url}metrics`)).text()));
    await first.close();

    const backend = await scriptedBackend((req, res) => sendJson(res, 201, { id: req.headers['x-request-id'] }), port);
    const second = await startTestGateway(durableYaml(dbPath, backend.url));
    expect((await post(`${second.url}commands`, commands[0])).status).toBe(201);
    await eventually(() => backend.received.length >= 3, 15_000);
    for (const command of commands) {
      const events = await eventually(async () => {
        const { body } = await getJson(`${second.url}events?correlationId=${command.id}`);
        return body.events.length ? body.events : undefined;
      });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'OrderPlacedV1', correlationid: command.id });
    }
    expect(backend.received.map((r) => r.headers['x-request-id']).sort()).toEqual(commands.map((c) => c.id).sort());
  }, 30_000);

  it('an attempt cut by shutdown stays in the outbox and is delivered after the restart', async () => {
    const dbPath = join(tempDir(), 'gateway.db');
    let answer = false;
    const backend = await scriptedBackend((req, res) => {
      if (answer) sendJson(res, 201, { id: req.headers['x-request-id'] });
    });
    const yaml = durableYaml(dbPath, backend.url, '[10ms]', '100ms').replace('timeout: 500ms', 'timeout: 30s');
    const first = await startTestGateway(yaml);
    const command = placeOrder();
    await post(`${first.url}commands`, command);
    await eventually(() => backend.received.length === 1);
    await first.close();

    answer = true;
    const second = await startTestGateway(yaml);
    const events = await eventually(async () => {
      const { body } = await getJson(`${second.url}events?correlationId=${command.id}`);
      return body.events.length ? body.events : undefined;
    });
    expect(events[0]).toMatchObject({ type: 'OrderPlacedV1', correlationid: command.id });
    expect(backend.received).toHaveLength(2);
  }, 20_000);
});
