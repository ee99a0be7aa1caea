import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteTaskStore } from '../../../src/bridges/a2a/sqlite-task-store.ts';
import { tempDir } from '../../support/gateway.ts';
import { caller, task, taskStoreContract } from './task-store-contract.ts';

taskStoreContract('sqlite', (limits) => new SqliteTaskStore(join(tempDir(), 'gateway.db'), limits));

describe('SqliteTaskStore across a restart', () => {
  it('a reopened store still answers for the tasks saved before', async () => {
    const path = join(tempDir(), 'gateway.db');
    const limits = { maxTasks: 10, ttlMs: 60_000 };
    const first = new SqliteTaskStore(path, limits);
    await first.open();
    await first.save(task('t1'), caller('alice'));
    await first.close();
    const again = new SqliteTaskStore(path, limits);
    await again.open();
    expect(await again.load('t1', caller('alice'))).toEqual(task('t1'));
    await again.close();
  });
});
