import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, track } from '../../support/gateway.ts';
import { appendEvents, subscribe, tableResolver } from './support.ts';

afterEach(closeAll);

const tls = (file: string) => fileURLToPath(new URL(`../../fixtures/tls/${file}`, import.meta.url));

/** An HTTPS receiver on 127.0.0.1:0 whose certificate (from the test CA) names only receiver.test. */
async function httpsReceiver() {
  const seen: Array<{ servername: string | false | null; host: string | undefined; body: string }> = [];
  const server: Server = createServer({ key: readFileSync(tls('receiver.key')), cert: readFileSync(tls('receiver.pem')) }, (req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ servername: (req.socket as TLSSocket).servername, host: req.headers.host, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) });
  return { port: (server.address() as { port: number }).port, seen };
}

/** A gateway delivering over https only, to loopback, optionally trusting the test CA. */
function gateway(withCa: boolean) {
  const ca = withCa ? `\n  ca: ${tls('ca.pem')}` : '';
  const yaml = gatewayYaml(`webhooks:\n  allowPrivateNetworks: [127.0.0.0/8]\n  retry: { schedule: [5s] }\n  timeout: 2s${ca}`);
  return startTestGateway(yaml, {}, undefined, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
}

describe('webhook delivery over TLS', () => {
  it('trusts webhooks.ca and keeps the TLS server name and Host of the URL while connecting to the pinned address', async () => {
    const receiver = await httpsReceiver();
    const gw = await gateway(true);
    const { status } = await subscribe(gw, { webhook: { url: `https://receiver.test:${receiver.port}/hook` } });
    expect(status).toBe(201);
    const [eventId] = await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.seen.length === 1);
    expect(receiver.seen[0]).toMatchObject({ servername: 'receiver.test', host: `receiver.test:${receiver.port}` });
    expect(JSON.parse(receiver.seen[0].body).id).toBe(eventId);
  });

  it('does not deliver to a certificate no trusted CA signed', async () => {
    const receiver = await httpsReceiver();
    const gw = await gateway(false);
    const { body } = await subscribe(gw, { webhook: { url: `https://receiver.test:${receiver.port}/hook` } });
    await appendEvents(gw, 'OrderPlacedV1');
    const failed = await eventually(async () => {
      const { deliveries } = (await getJson(`${gw.url}subscriptions/${body.id}/deliveries`)).body;
      return deliveries.find((d: { attempts: number }) => d.attempts >= 1);
    });
    expect(failed.status).not.toBe('succeeded');
    expect(receiver.seen).toHaveLength(0);
  });
});
