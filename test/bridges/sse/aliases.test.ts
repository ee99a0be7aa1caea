import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { readSse } from '../../support/sse.ts';
import { authorizePayment, FAST_DISPATCH, ownIdBackend, post, protoBackend } from '../../commands/support.ts';
import type { Gateway } from '../../../src/app.ts';
import { append, cloudEvent, openLive, openStream, type LiveStream } from './support.ts';

afterEach(closeAll);

/** Dispatch that waits long enough for a backend holding its answer back (`ownIdBackend`'s `beforeAnswer`). */
const PATIENT_DISPATCH = 'commands: { dispatch: { timeout: 60s, concurrency: 4, retry: { schedule: [50ms, 50ms] } } }';

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

  it('a stream that already let the backend\'s event go by (ingested before the backend answered with its own id) still gets it once the alias is learnt', async () => {
    const command = authorizePayment();
    let all: LiveStream | undefined;
    // The backend answers only once its event went through the live tail: the stream below was offered it before the alias existed.
    const backend = await ownIdBackend('PaymentCompletedV1', { beforeAnswer: async (own) => void (await all?.eventsUntil(`evt-${own}`, 30_000)) });
    const gw = await startTestGateway(gatewayYaml(`${PATIENT_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'odd')}`));
    all = await openLive(`${gw.url}events/stream`);
    const live = await openLive(`${gw.url}events/stream?correlationId=${command.id}`);
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    const [record] = await live.events(1, 30_000);
    expect(JSON.parse(record.data)).toMatchObject({ id: `evt-own-${command.id}`, correlationid: `own-${command.id}` });
    expect((await live.records.next()).done).toBe(true);
  }, 60_000);

  it('an event of the alias the stream has moved past is sent out of log order, once, and the stream still ends on it', async () => {
    const command = authorizePayment();
    let all: LiveStream | undefined;
    let live: LiveStream | undefined;
    let gw: Gateway | undefined;
    const note = cloudEvent('PaymentNotedV1', { correlationid: String(command.id) });
    let noted: (ids: string[]) => void = () => undefined;
    const beforeAnswer = new Promise<string[]>((resolve) => (noted = resolve));
    const backend = await ownIdBackend('PaymentCompletedV1', {
      beforeAnswer: async (own) => {
        // The backend's event went by unmatched, then an event of the command id itself moves the stream's cursor past it.
        await all?.eventsUntil(`evt-${own}`, 30_000);
        await append(gw as Gateway, [note]);
        noted((await (live as LiveStream).events(1, 30_000)).map((r) => String(r.id)));
      },
    });
    gw = await startTestGateway(gatewayYaml(`${PATIENT_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'odd')}`));
    all = await openLive(`${gw.url}events/stream`);
    live = await openLive(`${gw.url}events/stream?correlationId=${command.id}`);
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    // The stream sent the note before the backend answered; then the backend's own event, once, and its end.
    expect(await beforeAnswer).toEqual([note.id]);
    const records = await live.events(2, 30_000);
    expect(records.map((r) => r.id)).toEqual([`evt-own-${command.id}`]);
    expect((await live.records.next()).done).toBe(true);
  }, 60_000);
});
