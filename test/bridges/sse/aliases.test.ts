import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { readSse } from '../../support/sse.ts';
import { authorizePayment, FAST_DISPATCH, post, protoBackend, scriptedBackend, sendJson } from '../../commands/support.ts';
import { append, cloudEvent, openLive, openStream } from './support.ts';

afterEach(closeAll);

/**
 * A proto backend that answers every command 201 with its own id (`own-<command id>`) and then
 * publishes a terminal event correlated with that own id only.
 */
async function ownIdBackend() {
  const events: unknown[] = [];
  return scriptedBackend((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/commands' && req.method === 'GET') return sendJson(res, 200, { commands: [{ schema: 'authorize-payment', version: '1.0' }] });
    if (path === '/commands/authorize-payment/1.0') return sendJson(res, 200, { type: 'object' });
    if (path === '/events') return sendJson(res, 200, { events });
    if (path === '/commands' && req.method === 'POST') {
      const own = `own-${JSON.parse(req.body).id}`;
      events.push({ specversion: '1.0', id: `evt-${own}`, source: 'urn:odd', type: 'PaymentCompletedV1', datacontenttype: 'application/json', correlationid: own, time: new Date().toISOString(), data: {} });
      return sendJson(res, 201, { id: own });
    }
    sendJson(res, 404, {});
  });
}

describe('SSE streams follow correlation aliases', () => {
  it('a stream opened before the command matches the backend\'s own id learnt while it is open, and closes on its terminal event', async () => {
    const backend = await ownIdBackend();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'odd')}`));
    const command = authorizePayment();
    const live = await openLive(`${gw.url}events/stream?correlationId=${command.id}`);
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    const [record] = await live.events(1, 10_000);
    expect(JSON.parse(record.data)).toMatchObject({ id: `evt-own-${command.id}`, correlationid: `own-${command.id}`, type: 'PaymentCompletedV1' });
    // closeOnTerminal: the stream ends after the backend's terminal event.
    expect((await live.records.next()).done).toBe(true);
  });

  it('a stream opened later replays the aliased events from history (and GET /events finds them too)', async () => {
    const backend = await ownIdBackend();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'odd')}`));
    const [before] = await append(gw, [cloudEvent('UnrelatedV1')]);
    const command = authorizePayment();
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    let history: Array<{ id: string }> = [];
    for (let i = 0; i < 200 && history.length === 0; i++) {
      history = (await getJson(`${gw.url}events?correlationId=${command.id}`)).body.events;
      if (history.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(history.map((e) => e.id)).toEqual([`evt-own-${command.id}`]);
    // Replay after an earlier event: the aliased terminal event comes back, then closeOnTerminal ends the stream.
    const stream = await openStream(`${gw.url}events/stream?correlationId=${command.id}`, { 'last-event-id': before.id });
    const records = await readSse(stream.body, { timeoutMs: 10_000 });
    expect(records.filter((r) => r.data !== '').map((r) => r.id)).toEqual([`evt-own-${command.id}`]);
  });
});
