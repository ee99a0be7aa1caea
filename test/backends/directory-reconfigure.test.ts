/**
 * `BackendDirectory.reconfigure` (a configuration reload): configured backends are added, replaced
 * and removed, each listener is told, runtime backends stay, and an id held by a runtime backend
 * refuses the whole change.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { BackendDirectory, type Backend } from '../../src/backends/directory.ts';
import type { BackendConfig, LegacyBackendConfig, ProtoBackendConfig } from '../../src/config/types.ts';

const logger = pino({ level: 'silent' });

function legacy(id: string, path = '/a'): LegacyBackendConfig {
  return {
    kind: 'legacy', id, url: `http://127.0.0.1:9/${id}`, service: id, source: `urn:test:${id}`, circuit: { failures: 5, cooldownMs: 1000 }, headers: {},
    forwardIdentity: 'none', correlationHeader: 'X-Correlation-Id', queries: [], records: [],
    commands: [{ type: 'DoThing', schema: 'do-thing', version: '1.0', jsonSchema: { type: 'object' }, request: { method: 'POST', path }, events: {} }],
  };
}

function proto(id: string): ProtoBackendConfig {
  return {
    kind: 'proto', id, url: `http://127.0.0.1:9/${id}`, service: id, source: `urn:test:${id}`, circuit: { failures: 5, cooldownMs: 1000 }, headers: {},
    forwardIdentity: 'none', refreshMs: 600_000, events: { follow: 'poll', intervalMs: 1000 },
  };
}

function recorder(directory: BackendDirectory) {
  const told: string[] = [];
  directory.watch({
    added: (b: Backend) => void told.push(`added ${b.id} ${b.kind}`),
    removed: (b: Backend) => void told.push(`removed ${b.id}`),
    replaced: (previous: Backend, next: Backend) => void told.push(`replaced ${previous.id} ${previous === next ? 'same' : 'new'}`),
  });
  return told;
}

describe('BackendDirectory.reconfigure', () => {
  it('adds, replaces and removes configured backends and tells every listener; unchanged ones keep their object', async () => {
    const configs: BackendConfig[] = [legacy('alpha'), legacy('beta'), legacy('same')];
    const directory = new BackendDirectory(configs, 'http://gw/', logger);
    const told = recorder(directory);
    const same = directory.get('same');
    const changes = await directory.reconfigure([legacy('alpha', '/b'), legacy('same'), legacy('gamma')]);
    expect(changes.added).toEqual(['gamma']);
    expect(changes.changed).toEqual(['alpha']);
    expect(changes.removed.map((b) => b.id)).toEqual(['beta']);
    expect(told.sort()).toEqual(['added gamma legacy', 'removed beta', 'replaced alpha new']);
    expect(directory.get('beta')).toBeUndefined();
    expect(directory.isConfigured('beta')).toBe(false);
    expect(directory.isConfigured('gamma')).toBe(true);
    expect(directory.get('same')).toBe(same);
    expect((directory.get('alpha')!.config as LegacyBackendConfig).commands[0]!.request.path).toBe('/b');
  });

  it('keeps a changed backend paused, and can turn a legacy backend into a proto one under the same id', async () => {
    const directory = new BackendDirectory([legacy('alpha')], 'http://gw/', logger);
    directory.pause('alpha');
    await directory.reconfigure([proto('alpha')]);
    expect(directory.get('alpha')?.kind).toBe('proto');
    expect(directory.isPaused('alpha')).toBe(true);
    directory.close();
  });

  it('leaves runtime backends alone, and refuses (changing nothing) a configured id that a runtime backend holds', async () => {
    const directory = new BackendDirectory([legacy('alpha')], 'http://gw/', logger);
    await directory.add(proto('runtime'));
    await directory.reconfigure([legacy('beta')]);
    expect(directory.list().map((b) => b.id).sort()).toEqual(['beta', 'runtime']);
    expect(directory.runtimeIdsAmong([legacy('runtime')])).toEqual(['runtime']);
    await expect(directory.reconfigure([legacy('gamma'), legacy('runtime')])).rejects.toThrow(/runtime/);
    expect(directory.list().map((b) => b.id).sort()).toEqual(['beta', 'runtime']);
    directory.close();
  });
});
