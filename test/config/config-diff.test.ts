/**
 * What a reload applies in place and what it names as "needs a restart" (config-diff.ts).
 */
import { describe, expect, it } from 'vitest';
import { diffConfig, needsRestart } from '../../src/config/config-diff.ts';
import { parseConfig } from '../../src/gateway-config.ts';

const parse = (yaml: string) => parseConfig(yaml.includes('storage:') ? yaml : `storage: { driver: memory }\n${yaml}`, '/tmp/gateway.yaml', {});

describe('config diff', () => {
  it('names the listener, the storage and the gRPC listener as needing a restart, and nothing that applies in place', async () => {
    const before = await parse('server: { port: 8080 }\ngrpc: { port: 50051 }\n');
    const after = await parse(`server: { port: 9090, cors: { origins: ["https://app.example"] }, logLevel: warn }
storage: { driver: sqlite, path: /tmp/x.db }
grpc: { port: 50052 }
commands: { rateLimit: { perSecond: 5 } }
sse: { maxConnections: 10, keepalive: 5s }
events: { retention: { maxEvents: 10 } }
auth: { type: none, keys: [] }
`);
    const diff = diffConfig(before, after);
    expect(needsRestart(diff)).toEqual(['grpc.port', 'server.port', 'storage.driver', 'storage.path']);
    expect(diff.settingsChanged).toEqual(expect.arrayContaining(['server.cors', 'server.logLevel', 'commands.rateLimit', 'sse.maxConnections', 'sse.keepaliveMs', 'events.retention']));
  });

  it('lists backends added, removed and changed by id, apart from the settings', async () => {
    const backend = (id: string, url: string) => `  - { id: ${id}, kind: proto, url: "${url}" }\n`;
    const before = await parse(`backends:\n${backend('a', 'http://127.0.0.1:1')}${backend('b', 'http://127.0.0.1:1')}`);
    const after = await parse(`backends:\n${backend('a', 'http://127.0.0.1:2')}${backend('c', 'http://127.0.0.1:1')}`);
    expect(diffConfig(before, after)).toEqual({ backendsAdded: ['c'], backendsRemoved: ['b'], backendsChanged: ['a'], sectionsChanged: [], settingsChanged: [] });
  });
});
