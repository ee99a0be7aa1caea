import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryRegistryStore } from '../../src/registry/memory-registry-store.ts';
import { SqliteRegistryStore } from '../../src/registry/sqlite-registry-store.ts';
import { tempDir } from '../support/gateway.ts';
import { registered, registryStoreContract } from './store-contract.ts';

registryStoreContract('memory', () => new MemoryRegistryStore());
registryStoreContract('sqlite (file)', () => new SqliteRegistryStore(join(tempDir(), 'data', 'gateway.db')));
registryStoreContract('sqlite (:memory:)', () => new SqliteRegistryStore(':memory:'));

describe('SqliteRegistryStore', () => {
  it('keeps services and paused marks across a reopen of the file', async () => {
    const path = join(tempDir(), 'gateway.db');
    const first = new SqliteRegistryStore(path);
    await first.open();
    await first.put(registered('a', { endpoint: 'http://10.0.0.1/' }));
    await first.setPaused('a', true);
    await first.close();
    const second = new SqliteRegistryStore(path);
    await second.open();
    expect(await second.list()).toEqual([registered('a', { endpoint: 'http://10.0.0.1/' })]);
    expect(await second.pausedIds()).toEqual(['a']);
    await second.close();
  });
});
