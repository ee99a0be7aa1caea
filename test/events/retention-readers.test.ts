import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { FANOUT_CHECKPOINT, fanOutReader } from '../../src/bridges/webhooks/fan-out.ts';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { Pruner } from '../../src/log/pruner.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';

/** A logger that keeps its warnings. */
function recordingLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void (JSON.parse(line).level === 40 && warnings.push(JSON.parse(line))) });
  return { logger, warnings };
}

describe('retention never outruns a durable reader', () => {
  it('keeps what the webhook fan-out has not read, reports it held back, and deletes it once read', async () => {
    const log = new MemoryEventLog();
    await log.open();
    const { appended } = await log.append(Array.from({ length: 10 }, (_, i) => ({ event: cloudEvent(`evt-${i}`) })));
    await log.saveCheckpoint({ key: FANOUT_CHECKPOINT, value: String(appended[1].position) });
    const held: number[] = [];
    const { logger } = recordingLogger();
    const pruner = new Pruner(log, { maxEvents: 3, maxAgeMs: 60_000 }, logger, { readers: [fanOutReader(log)], onHeldBack: (n) => held.push(n) });
    await pruner.pass();
    expect(await log.positionOf('evt-1')).toBeUndefined();
    expect(await log.positionOf('evt-2')).toBeTypeOf('number');
    expect(await log.count()).toBe(8);
    expect(held.at(-1)).toBe(5);

    await log.saveCheckpoint({ key: FANOUT_CHECKPOINT, value: String(appended[9].position) });
    await pruner.pass();
    expect(await log.count()).toBe(3);
    expect(held.at(-1)).toBe(0);
  });

  it('logs once when held back longer than maxAge, and again only after a new hold', async () => {
    const log = new MemoryEventLog();
    await log.open();
    await log.append(Array.from({ length: 4 }, (_, i) => ({ event: cloudEvent(`old-${i}`) })));
    await log.saveCheckpoint({ key: FANOUT_CHECKPOINT, value: '0' });
    let now = Date.now() + 120_000;
    const { logger, warnings } = recordingLogger();
    const pruner = new Pruner(log, { maxEvents: 0, maxAgeMs: 60_000 }, logger, { readers: [fanOutReader(log)], now: () => now });
    await pruner.pass();
    expect(warnings).toHaveLength(0);
    now += 61_000;
    await pruner.pass();
    await pruner.pass();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ heldBack: 4, readers: ['webhooks'] });
    expect(await log.count()).toBe(4);
  });
});
