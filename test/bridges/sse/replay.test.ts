import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway, tempDir } from '../../support/gateway.ts';
import { jsonEvents } from '../../support/sse.ts';
import { append, cloudEvent, metricValue, openLive, openStream, readRecords } from './support.ts';

afterEach(closeAll);

/** 4 KiB of data per event, so a replay spans many socket writes and waits for the client to read. */
const PADDING = 'x'.repeat(4096);

/** Appends one event at a time until stopped; keeps the ids in log order. */
function backgroundAppender(gw: Gateway) {
  const ids: string[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const [event] = await append(gw, [cloudEvent('TickV1', { data: { n: ids.length, padding: PADDING } })]);
      ids.push(event.id);
      // About one event per millisecond: a replay reads faster than that, so it catches up while appends go on.
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  })();
  return {
    ids,
    async stop(): Promise<void> {
      running = false;
      await done;
    },
  };
}

/** Makes the gateway's log reads take a few ms on both sides of their snapshot. */
function slowReads(gw: Gateway): void {
  const log = gw.log;
  const pause = () => new Promise((resolve) => setTimeout(resolve, 2));
  const query = log.query.bind(log);
  const positionOf = log.positionOf.bind(log);
  log.query = async (...args) => {
    await pause();
    const page = await query(...args);
    await pause();
    return page;
  };
  log.positionOf = async (id) => {
    await pause();
    const position = await positionOf(id);
    await pause();
    return position;
  };
}

describe('Last-Event-ID replay', () => {
  // A slow store: each read waits a little before and after taking its snapshot, so appends land
  // between the subscription, the id lookup and every replay page (the seam's racy moments).
  // With a 32 KiB buffer the live events held during the replay overflow and are re-read from the log.
  it.each(['1mb', '32kb'])('resumes exactly across a reconnect while events keep arriving: no gap, no duplicate (buffer %s)', async (buffer) => {
    const gw = await startTestGateway(gatewayYaml(`sse: { maxBufferedBytes: ${buffer} }`));
    slowReads(gw);
    const appender = backgroundAppender(gw);
    const first = await openLive(`${gw.url}events/stream?type=TickV1`);
    const seenFirst = (await first.events(150)).map((r) => r.id as string);
    first.close();
    // Events keep being appended while no stream is open.
    await eventually(() => appender.ids.length > appender.ids.indexOf(seenFirst.at(-1) as string) + 300);
    const second = await openLive(`${gw.url}events/stream?type=TickV1`, { 'Last-Event-ID': seenFirst.at(-1) as string });
    // Read past the events that were in the log at reconnect, into live ones, while appends go on.
    const backlog = appender.ids.length - appender.ids.indexOf(seenFirst.at(-1) as string) - 1;
    const seenSecond = (await second.events(backlog + 100)).map((r) => r.id as string);
    await appender.stop();
    // Two last events after the appender stopped, the second once the seam is surely behind us:
    // the first may come from the replay, so a duplicate flushed after it shows before the second.
    for (const pauseMs of [0, 100]) {
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      const [marker] = await append(gw, [cloudEvent('TickV1')]);
      appender.ids.push(marker.id);
      seenSecond.push(...(await second.eventsUntil(marker.id)).map((r) => r.id as string));
    }
    second.close();
    const union = [...seenFirst, ...seenSecond];
    expect(new Set(union).size).toBe(union.length);
    expect(union).toEqual(appender.ids.slice(appender.ids.indexOf(seenFirst[0])));
    expect(await metricValue(gw, 'proto_gateway_sse_replays_total', { outcome: 'replayed' })).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_sse_slow_consumer_disconnects_total')).toBe(0);
  });

  it('replays only the events after the id that match the filters, in log order, then continues live', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const [from, , paid1, , paid2] = await append(gw, [
      cloudEvent('PaidV1'),
      cloudEvent('ShippedV1'),
      cloudEvent('PaidV1'),
      cloudEvent('ShippedV1'),
      cloudEvent('PaidV1'),
    ]);
    const live = await openLive(`${gw.url}events/stream?type=PaidV1`, { 'Last-Event-ID': from.id });
    const replayed = await live.events(2);
    expect(replayed.map((r) => r.id)).toEqual([paid1.id, paid2.id]);
    const [next] = await append(gw, [cloudEvent('PaidV1')]);
    expect((await live.events(1)).map((r) => r.id)).toEqual([next.id]);
    live.close();
  });

  it('replays from the sqlite store the same way', async () => {
    const gw = await startTestGateway(gatewayYaml('', `storage: { driver: sqlite, path: ${join(tempDir(), 'log.db')} }`));
    const [from, ...after] = await append(gw, [cloudEvent('SqlV1'), cloudEvent('SqlV1'), cloudEvent('SqlV1')]);
    const live = await openLive(`${gw.url}events/stream`, { 'Last-Event-ID': from.id });
    expect((await live.events(2)).map((r) => r.id)).toEqual(after.map((e) => e.id));
    const [next] = await append(gw, [cloudEvent('SqlV1')]);
    expect((await live.events(1)).map((r) => r.id)).toEqual([next.id]);
    live.close();
  });

  it('takes the id from the lastEventId query parameter (the header wins when both are given)', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const [a, b, c] = await append(gw, [cloudEvent('XV1'), cloudEvent('XV1'), cloudEvent('XV1')]);
    const byQuery = await openLive(`${gw.url}events/stream?lastEventId=${a.id}`);
    expect((await byQuery.events(2)).map((r) => r.id)).toEqual([b.id, c.id]);
    byQuery.close();
    const both = await openLive(`${gw.url}events/stream?lastEventId=${a.id}`, { 'Last-Event-ID': b.id });
    const marker = (await append(gw, [cloudEvent('XV1')]))[0];
    expect((await both.events(2)).map((r) => r.id)).toEqual([c.id, marker.id]);
    both.close();
  });

  it('says ": reset" for an unknown or pruned id and goes live without history', async () => {
    const gw = await startTestGateway(gatewayYaml());
    await append(gw, [cloudEvent('OldV1'), cloudEvent('OldV1')]);
    const stream = await openStream(`${gw.url}events/stream`, { 'Last-Event-ID': 'no-such-event' });
    const reset = readRecords(stream, { until: (record) => record.data !== '' });
    await eventually(async () => (await metricValue(gw, 'proto_gateway_sse_replays_total', { outcome: 'reset' })) === 1);
    const [fresh] = await append(gw, [cloudEvent('NewV1')]);
    const records = await reset;
    expect(records.some((record) => record.comments.includes('reset'))).toBe(true);
    expect(jsonEvents(records).map((r) => r.id)).toEqual([fresh.id]);
  });
});

describe('closeOnTerminal', () => {
  it('ends a correlationId stream after its terminal event, live', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const stream = await openStream(`${gw.url}events/stream?correlationId=cmd-1`);
    const whole = readRecords(stream, { timeoutMs: 5000 });
    await eventually(async () => (await metricValue(gw, 'proto_gateway_sse_connections')) === 1);
    const [accepted, , done] = await append(gw, [
      cloudEvent('PaymentAcceptedV1', { correlationid: 'cmd-1' }),
      cloudEvent('PaymentCompletedV1', { correlationid: 'other' }),
      cloudEvent('PaymentCompletedV1', { correlationid: 'cmd-1' }),
      cloudEvent('PaymentNoteV1', { correlationid: 'cmd-1' }),
    ]);
    // readRecords resolves only when the server ends the stream.
    expect(jsonEvents(await whole).map((r) => r.id)).toEqual([accepted.id, done.id]);
  });

  it('ends it after a terminal event delivered by the replay', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const [from, failed] = await append(gw, [
      cloudEvent('OrderPlacedV1', { correlationid: 'cmd-2' }),
      cloudEvent('OrderFailed', { correlationid: 'cmd-2' }),
      cloudEvent('OrderNoteV1', { correlationid: 'cmd-2' }),
    ]);
    const stream = await openStream(`${gw.url}events/stream?correlationId=cmd-2`, { 'Last-Event-ID': from.id });
    expect(jsonEvents(await readRecords(stream)).map((r) => r.id)).toEqual([failed.id]);
  });

  it('keeps the stream open when sse.closeOnTerminal is off, or without a correlationId filter', async () => {
    const gw = await startTestGateway(gatewayYaml('sse: { closeOnTerminal: false }'));
    const filtered = await openLive(`${gw.url}events/stream?correlationId=cmd-3`);
    const unfiltered = await openLive(`${gw.url}events/stream`);
    const events = await append(gw, [cloudEvent('XSucceededV2', { correlationid: 'cmd-3' }), cloudEvent('XNoteV1', { correlationid: 'cmd-3' })]);
    expect((await filtered.events(2)).map((r) => r.id)).toEqual(events.map((e) => e.id));
    expect((await unfiltered.events(2)).map((r) => r.id)).toEqual(events.map((e) => e.id));
    filtered.close();
    unfiltered.close();
  });
});
