import { copyFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.ts';
import { parseConfig } from '../../src/gateway-config.ts';
import { freePort, tempDir } from '../support/gateway.ts';

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('a start-up that fails half-way', () => {
  it('rejects and closes what it had opened: nothing is left listening (regression: it kept serving 503s)', async () => {
    const dir = tempDir();
    copyFileSync(fileURLToPath(new URL('../fixtures/tls/ca.pem', import.meta.url)), join(dir, 'ca.pem'));
    const port = await freePort();
    const config = await parseConfig(`server: { host: 127.0.0.1, port: ${port} }
storage: { driver: sqlite, path: ./gateway.db }
webhooks: { ca: ./ca.pem }
`, join(dir, 'gateway.yaml'), {});
    rmSync(join(dir, 'ca.pem'));
    await expect(startGateway(config, { logger: pino({ level: 'silent' }) })).rejects.toThrow(/ca\.pem/);
    expect(await listening(port)).toBe(false);
  });
});
