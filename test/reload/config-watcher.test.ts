/**
 * The file watch of `server.watchConfig`: a Kubernetes ConfigMap symlink swap, an editor's
 * rename-over and a plain write are each one change; a touch with the same content, another file
 * in the directory and a file missing for a moment are none.
 */
import { mkdirSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigWatcher } from '../../src/reload/config-watcher.ts';
import { eventually, tempDir } from '../support/gateway.ts';

const watchers: ConfigWatcher[] = [];
afterEach(() => {
  for (const w of watchers.splice(0)) w.close();
});

async function watching(file: string) {
  const changes = { count: 0 };
  const watcher = new ConfigWatcher({ file, onChange: () => (changes.count += 1), logger: pino({ level: 'silent' }), debounceMs: 30 });
  watchers.push(watcher);
  await watcher.start();
  return changes;
}

const settle = () => new Promise((r) => setTimeout(r, 300));

describe('ConfigWatcher', () => {
  it('sees a ConfigMap symlink swap (..data renamed to a new directory) once', async () => {
    const dir = tempDir();
    const publish = (version: string, text: string) => {
      mkdirSync(join(dir, version));
      writeFileSync(join(dir, version, 'gateway.yaml'), text);
      symlinkSync(version, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    publish('..v1', 'a: 1\n');
    symlinkSync('..data/gateway.yaml', join(dir, 'gateway.yaml'));
    const changes = await watching(join(dir, 'gateway.yaml'));
    publish('..v2', 'a: 2\n');
    await eventually(() => changes.count === 1, 5_000);
    await settle();
    expect(changes.count).toBe(1);
  });

  it('sees a rename-over and a write, but not the same content, another file, or a missing file', async () => {
    const dir = tempDir();
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'a: 1\n');
    const changes = await watching(file);
    writeFileSync(file, 'a: 1\n');
    writeFileSync(join(dir, 'other.txt'), 'x');
    await settle();
    expect(changes.count).toBe(0);
    writeFileSync(join(dir, '.gateway.yaml.swp'), 'a: 2\n');
    renameSync(join(dir, '.gateway.yaml.swp'), file);
    await eventually(() => changes.count === 1, 5_000);
    unlinkSync(file);
    await settle();
    expect(changes.count).toBe(1);
    writeFileSync(file, 'a: 3\n');
    await eventually(() => changes.count === 2, 5_000);
  });
});
