/**
 * `storage.url` takes what ioredis takes: a password, an ACL user, a database number, and TLS
 * (`rediss://`, the server's CA trusted through Node's `NODE_EXTRA_CA_CERTS`), each against a
 * redis-server of the test's own on loopback.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ordersBackend, placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, freePort, gatewayYaml, startTestGateway, tempDir } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';
import { PrivateRedis } from '../support/redis.ts';
import { taggedPrefix } from '../../src/storage/redis.ts';

afterEach(closeAll);

const PREFIX = 'pgw-url:';

/** The YAML of a gateway on `url` in front of a backend answering 201. */
async function yamlOn(url: string): Promise<string> {
  const orders = await scriptedBackend((_req, res) => sendJson(res, 201, {}));
  return gatewayYaml(`backends:\n${ordersBackend(orders.url)}`, `storage: { driver: redis, url: "${url}", prefix: "${PREFIX}" }`);
}

/** The keys the gateway wrote (under the test prefix made a hash tag) in database `db` of `server`, read with the server's password. */
async function keysIn(server: PrivateRedis, db: number, password?: string): Promise<string[]> {
  const client = new Redis({ port: server.port, host: '127.0.0.1', db, ...(password && { password }) });
  try {
    return await client.keys(`${taggedPrefix(PREFIX)}*`);
  } finally {
    client.disconnect();
  }
}

describe('storage.url with credentials and a database', () => {
  let server: PrivateRedis;
  beforeAll(async () => {
    server = await PrivateRedis.start(['--requirepass', 's3cret', '--user', 'gateway', 'on', '>gw-pass', '~*', '&*', '+@all']);
  }, 30_000);
  afterAll(async () => {
    await server.dispose();
  });

  it('authenticates with the password and keeps every key in the database the URL names', async () => {
    const gw = await startTestGateway(await yamlOn(`redis://:s3cret@127.0.0.1:${server.port}/3`));
    expect((await post(`${gw.url}commands`, placeOrder())).status).toBe(201);
    expect((await keysIn(server, 3, 's3cret')).length).toBeGreaterThan(0);
    expect(await keysIn(server, 0, 's3cret')).toEqual([]);
  });

  it('authenticates as an ACL user (user:password)', async () => {
    const gw = await startTestGateway(await yamlOn(`redis://gateway:gw-pass@127.0.0.1:${server.port}/5`));
    expect((await post(`${gw.url}commands`, placeOrder())).status).toBe(201);
    expect((await keysIn(server, 5, 's3cret')).length).toBeGreaterThan(0);
  });

  it('does not start with a wrong password', async () => {
    await expect(startTestGateway(await yamlOn(`redis://:wrong@127.0.0.1:${server.port}/3`))).rejects.toThrow(/WRONGPASS|invalid username-password/);
  });
});

describe('storage.url rediss:// (TLS)', () => {
  it('connects over TLS to a server whose certificate the process trusts (NODE_EXTRA_CA_CERTS)', async () => {
    const server = await PrivateRedis.startTls();
    try {
      const port = await freePort();
      const file = join(tempDir(), 'gateway.yaml');
      writeFileSync(file, (await yamlOn(server.url)).replace('port: 0', `port: ${port}`));
      spawnGateway(file, { NODE_EXTRA_CA_CERTS: server.caFile });
      const base = `http://127.0.0.1:${port}/`;
      await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
      // The command store writes over the TLS connection before the 201.
      expect((await post(`${base}commands`, placeOrder())).status).toBe(201);
      await closeAll();
    } finally {
      await server.dispose();
    }
  }, 60_000);
});
