import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
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

  it('keeps push configs across a restart, and brings a file written before owners were stored up to date', async () => {
    const path = join(tempDir(), 'gateway.db');
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE a2a_tasks (scope TEXT NOT NULL, id TEXT NOT NULL, task TEXT NOT NULL, seq INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (scope, id))`);
    old.close();
    const limits = { maxTasks: 10, ttlMs: 60_000, maxTasksPerPrincipal: 5 };
    const first = new SqliteTaskStore(path, limits);
    await first.open();
    await first.save(task('t1'), caller('alice'));
    expect(await first.savePushConfig('t1', caller('alice'), 'c1', '{"id":"c1"}')).toBe('saved');
    await first.close();
    const again = new SqliteTaskStore(path, limits);
    await again.open();
    expect(await again.pushConfigs('t1', caller('alice'))).toEqual(['{"id":"c1"}']);
    expect(await again.tasksOf(caller('alice'))).toBe(1);
    await again.close();
  });
});
