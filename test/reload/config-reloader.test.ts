/**
 * The reloader: an invalid file or a failed check applies nothing; the same content is
 * `unchanged`; a step that fails is named while the others still apply; reloads run one at a time;
 * the generation and the metrics follow.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/config/types.ts';
import { loadConfig } from '../../src/gateway-config.ts';
import { configMetrics } from '../../src/metrics/config.ts';
import { ConfigReloader, type ReloadStep } from '../../src/reload/config-reloader.ts';
import { tempDir } from '../support/gateway.ts';

const logger = pino({ level: 'silent' });

async function setup(text: string, steps: ReloadStep[]) {
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, text);
  const registry = new Registry();
  const reloader = new ConfigReloader({ file, boot: await loadConfig(file, {}), load: (f) => loadConfig(f, {}), steps, metrics: configMetrics(registry), logger });
  const count = async (outcome: string) => (await registry.getSingleMetric('proto_gateway_config_reloads_total')!.get()).values.find((v) => v.labels.outcome === outcome)?.value;
  return { file, reloader, count };
}

const BASE = 'storage: { driver: memory }\n';

describe('ConfigReloader', () => {
  it('applies a valid change through every step in order, and moves the generation', async () => {
    const seen: string[] = [];
    const steps: ReloadStep[] = ['a', 'b'].map((name) => ({ name, apply: (next: GatewayConfig) => void seen.push(`${name}:${next.sse.maxConnections}`) }));
    const { file, reloader, count } = await setup(BASE, steps);
    const before = reloader.status().generation;
    writeFileSync(file, `${BASE}sse: { maxConnections: 7 }\n`);
    const report = await reloader.reload('test');
    expect(report).toMatchObject({ trigger: 'test', outcome: 'applied', needsRestart: [] });
    expect(seen).toEqual(['a:7', 'b:7']);
    expect(reloader.status().generation.hash).not.toBe(before.hash);
    expect(reloader.current.sse.maxConnections).toBe(7);
    expect(await count('applied')).toBe(1);
  });

  it('an invalid file, or a step whose check refuses, changes nothing and names the problem as validate does', async () => {
    let applied = 0;
    const steps: ReloadStep[] = [{ name: 'x', check: (next) => { if (next.sse.maxConnections === 13) throw new Error('13 is unlucky'); }, apply: () => void (applied += 1) }];
    const { file, reloader, count } = await setup(BASE, steps);
    const before = reloader.status().generation;
    writeFileSync(file, `${BASE}sse: { maxConnections: many }\n`);
    const invalid = await reloader.reload('test');
    expect(invalid.outcome).toBe('invalid');
    expect(invalid.problems).toMatch(/gateway\.yaml:2:\d+: /);
    writeFileSync(file, `${BASE}sse: { maxConnections: 13 }\n`);
    expect(await reloader.reload('test')).toMatchObject({ outcome: 'invalid', problems: expect.stringContaining('13 is unlucky') });
    writeFileSync(file, `${BASE}sse: {\n`);
    expect((await reloader.reload('test')).outcome).toBe('invalid');
    expect(applied).toBe(0);
    expect(reloader.status().generation).toEqual(before);
    expect(reloader.current.sse.maxConnections).not.toBe(13);
    expect(await count('invalid')).toBe(3);
  });

  it('the same content is unchanged; a failing step is named and the others still apply', async () => {
    const seen: string[] = [];
    const steps: ReloadStep[] = [
      { name: 'broken', apply: () => { throw new Error('cannot'); } },
      { name: 'fine', apply: () => void seen.push('fine') },
    ];
    const { file, reloader } = await setup(BASE, steps);
    expect((await reloader.reload('test')).outcome).toBe('unchanged');
    writeFileSync(file, `${BASE}server: { port: 9999 }\n`);
    const report = await reloader.reload('test');
    expect(report).toMatchObject({ outcome: 'failed', failures: ['broken: cannot'], needsRestart: ['server.port'] });
    expect(seen).toEqual(['fine']);
    expect(reloader.status().needsRestart).toEqual(['server.port']);
  });

  it('runs concurrent reloads one at a time', async () => {
    let running = 0;
    let most = 0;
    const steps: ReloadStep[] = [{ name: 'slow', apply: async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 20));
      running -= 1;
    } }];
    const { file, reloader } = await setup(BASE, steps);
    const reports = [];
    for (let i = 1; i <= 5; i += 1) {
      writeFileSync(file, `${BASE}sse: { maxConnections: ${i} }\n`);
      reports.push(reloader.reload('test'));
    }
    await Promise.all(reports);
    expect(most).toBe(1);
  });
});
