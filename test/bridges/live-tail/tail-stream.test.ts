import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LiveTail } from '../../../src/bridges/live-tail/live-tail.ts';
import { openTailStream } from '../../../src/bridges/live-tail/tail-stream.ts';
import { MemoryEventLog } from '../../../src/log/memory.ts';
import { cloudEvent } from '../../log/fixtures/cloud-event.ts';

async function setup() {
  const log = new MemoryEventLog();
  await log.open();
  const tail = new LiveTail({ source: log, logger: pino({ level: 'silent' }) });
  return { log, tail };
}

describe('the live tail as an async iterable', () => {
  it('replays after an event id, continues live with no gap or duplicate, and ends on a terminal event of its command', async () => {
    const { log, tail } = await setup();
    await log.append(['a', 'b', 'c'].map((id) => ({ event: cloudEvent(id, { correlationid: 'cmd' }) })));
    const stream = openTailStream(tail, { filter: { correlationIds: ['cmd'] }, afterId: 'a', closeOnTerminal: true });
    // Appended while the replay may still be reading: delivered once, in log order.
    await log.append([{ event: cloudEvent('d', { correlationid: 'cmd' }) }, { event: cloudEvent('x', { correlationid: 'other' }) }]);
    await log.append([{ event: cloudEvent('e', { correlationid: 'cmd', type: 'OrderCompletedV1' }) }, { event: cloudEvent('f', { correlationid: 'cmd' }) }]);
    const ids: string[] = [];
    for await (const event of stream) ids.push(event.id);
    expect(ids).toEqual(['b', 'c', 'd', 'e']);
    expect(await stream.ended).toBe('terminal');
    expect(tail.size).toBe(0);
  });

  it('follows an alias learnt while open, ends a consumer that falls behind its byte bound as slow, and ends every stream at shutdown', async () => {
    const { log, tail } = await setup();
    const aliased = openTailStream(tail, { filter: { correlationIds: ['cmd'] }, aliasesFor: 'cmd', closeOnTerminal: true });
    tail.addAlias('cmd', 'own-1');
    await log.append([{ event: cloudEvent('own-done', { correlationid: 'own-1', type: 'PaymentFailedV1' }) }]);
    const got: string[] = [];
    for await (const event of aliased) got.push(event.id);
    expect(got).toEqual(['own-done']);

    const slow = openTailStream(tail, { filter: {}, closeOnTerminal: false, maxBufferedBytes: 2_000 });
    await log.append(Array.from({ length: 20 }, (_, i) => ({ event: cloudEvent(`bulk-${i}`) })));
    expect(await slow.ended).toBe('slow');

    const open = openTailStream(tail, { filter: {}, closeOnTerminal: false });
    tail.close();
    expect(await open.ended).toBe('shutdown');
  });
});
