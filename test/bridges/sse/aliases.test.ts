import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { readSse } from '../../support/sse.ts';
import { authorizePayment, FAST_DISPATCH, ownIdBackend, post, protoBackend } from '../../commands/support.ts';
import { append, cloudEvent, openLive, openStream } from './support.ts';

afterEach(closeAll);

describe('SSE streams follow correlation aliases', () => {
  it('a stream opened before the command matches the backend\'s own id learnt while it is open, and closes on its terminal event', async () => {
    const backend = await ownIdBackend('PaymentCompletedV1');
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
    const backend = await ownIdBackend('PaymentCompletedV1');
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
