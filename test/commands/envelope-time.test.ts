/**
 * A command envelope without `time` (optional in CloudEvents 1.0) is accepted: the gateway stamps
 * the time it received it, and the backend gets the envelope with that `time`. A `time` that is
 * present is still checked (see refusals.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, startTestGateway } from '../support/gateway.ts';
import { FAST_DISPATCH, post, protoBackend, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

describe('POST /commands without time', () => {
  it('is accepted (201) and reaches the backend stamped with the time the gateway received it', async () => {
    const backend = await scriptedBackend((req, res) => {
      const path = req.url.split('?')[0];
      if (path === '/commands' && req.method === 'GET') return sendJson(res, 200, { commands: [{ schema: 'ship-parcel', version: '1.0' }] });
      if (path === '/commands/ship-parcel/1.0') return sendJson(res, 200, { type: 'object' });
      if (path === '/events') return sendJson(res, 200, { events: [] });
      if (path === '/commands' && req.method === 'POST') return sendJson(res, 201, { id: JSON.parse(req.body).id });
      sendJson(res, 404, {});
    });
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'parcels')}`));
    const command = { specversion: '1.0', id: 'cmd-no-time', source: 'urn:test', type: 'ShipParcel', datacontenttype: 'application/json', dataschema: 'ship-parcel/1.0', data: { parcel: 'p-1' } };
    const before = Date.now();
    await eventually(async () => (await post(`${gw.url}commands`, command)).status === 201 || undefined);
    const after = Date.now();
    const delivered = await eventually(() => backend.received.find((r) => r.method === 'POST' && r.url.startsWith('/commands')));
    const time = Date.parse(JSON.parse(delivered.body).time);
    expect(time).toBeGreaterThanOrEqual(before - 1000);
    expect(time).toBeLessThanOrEqual(after + 1000);
  });
});
