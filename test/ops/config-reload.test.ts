/**
 * SIGHUP on a spawned gateway: the process keeps running and serving, re-reads its configuration
 * file and logs what differs (backends added, removed, changed; other sections) and that it was not
 * applied; an invalid file is reported with its problems and the running configuration stays.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, freePort, tempDir } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';

afterEach(closeAll);

const backend = (id: string, port: number) => `  - { id: ${id}, kind: proto, url: "http://127.0.0.1:${port}", refresh: 10m }\n`;

describe('config reload (SIGHUP)', () => {
  it('logs the validated diff without applying it, reports an invalid file, and keeps serving', async () => {
    const port = await freePort();
    const down = await freePort();
    const file = join(tempDir(), 'gateway.yaml');
    const head = `server: { host: 127.0.0.1, port: ${port} }\nstorage: { driver: memory }\n`;
    writeFileSync(file, `${head}backends:\n${backend('alpha', down)}${backend('beta', down)}`);
    const gateway = spawnGateway(file);
    const base = `http://127.0.0.1:${port}/`;
    await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);

    writeFileSync(file, `${head}sse: { keepalive: 5s }\nbackends:\n${backend('alpha', down + 1)}${backend('gamma', down)}`);
    gateway.signal('SIGHUP');
    const changed = await eventually(() => gateway.logs.find((line) => line.signal === 'SIGHUP'), 30_000);
    expect(changed).toMatchObject({
      valid: true,
      applied: false,
      backendsAdded: ['gamma'],
      backendsRemoved: ['beta'],
      backendsChanged: ['alpha'],
      sectionsChanged: ['sse'],
    });
    // Not applied: the running gateway still has beta, not gamma.
    expect((await fetch(`${base}services/beta`)).status).toBe(200);
    expect((await fetch(`${base}services/gamma`)).status).toBe(404);

    writeFileSync(file, `${head}server: { port: eighty }\n`);
    gateway.signal('SIGHUP');
    const invalid = await eventually(() => gateway.logs.filter((line) => line.signal === 'SIGHUP')[1], 30_000);
    expect(invalid).toMatchObject({ valid: false, applied: false });
    expect(invalid.problems).toMatch(/gateway\.yaml:\d+:\d+: /);
    expect((await fetch(`${base}healthz`)).status).toBe(200);

    gateway.signal('SIGTERM');
    expect(await gateway.exited).toEqual({ code: 0, signal: null });
  }, 120_000);
});
