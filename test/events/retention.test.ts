import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../../src/log/sqlite.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';
import { closeAll, eventually, startTestGateway, tempDir } from '../support/gateway.ts';

afterEach(closeAll);

describe('retention', () => {
  it('prunes the oldest events beyond events.retention.maxEvents when the gateway runs', async () => {
    const dir = tempDir();
    const path = join(dir, 'gateway.db');
    const log = new SqliteEventLog(path);
    await log.open();
    const events = Array.from({ length: 12 }, (_, i) => cloudEvent(`evt-${i}`));
    await log.append(events.map((event) => ({ event })));
    await log.close();
    const gw = await startTestGateway(`server: { host: 127.0.0.1, port: 0 }
storage: { driver: sqlite, path: ${path} }
events: { retention: { maxEvents: 5, maxAge: 30d } }
`);
    await eventually(async () => (await gw.log.count()) === 5);
    expect(await gw.log.positionOf('evt-6')).toBeUndefined();
    expect(await gw.log.positionOf('evt-7')).toBeTypeOf('number');
    expect(await gw.log.positionOf('evt-11')).toBeTypeOf('number');
  });
});
