/**
 * Redis for tests: the run's shared server (`$PGW_TEST_REDIS_URL`, default 127.0.0.1:6379, or one
 * the global setup started when nothing answered there) with a random key prefix per store (so
 * parallel runs never collide, and the keys are deleted afterwards), and private servers started
 * on a free loopback port with the settings a test needs (`--appendonly yes --appendfsync always`,
 * a password, TLS, or one to stop and start again). Never touches the shared server's settings.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { taggedPrefix } from '../../src/storage/redis.ts';
import { freePort } from './redis-server.ts';

export { freePort };

/** The shared test Redis of this run (test/global-setup.ts): the one place tests read its URL from. */
export const SHARED_REDIS_URL: string = inject('redisUrl');

/** A fresh key prefix: nothing else uses it. */
export function randomPrefix(): string {
  return `test:${randomUUID()}:`;
}

/** Deletes every key under `prefix` on the Redis at `url`, and under its tagged form (what a gateway on `storage.prefix: <prefix>` writes). */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    await client.connect();
    for (const under of new Set([prefix, taggedPrefix(prefix)])) {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${under.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 500);
        if (keys.length > 0) await client.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  } catch {
    // The server may be gone (a test that stopped it); its keys went with it.
  } finally {
    client.disconnect();
  }
}

/** A redis-server of a test's own, on loopback, with extra arguments; stop and start it at will. */
export class PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** A TLS server's self-signed certificate (PEM file), the one thing a client must trust; set by `startTls`. */
  caFile: string | undefined;
  readonly #args: string[];
  readonly #dir: string;
  #child: ChildProcess | undefined;
  /** Set for a Sentinel: the whole command line. */
  #command: string[] | undefined;

  private constructor(port: number, args: string[], scheme = 'redis') {
    this.port = port;
    this.url = `${scheme}://127.0.0.1:${port}/0`;
    this.#args = args;
    this.#dir = mkdtempSync(join(tmpdir(), 'pgw-redis-'));
  }

  /** Starts a server on a free port with `args` (e.g. `['--appendonly', 'yes', '--appendfsync', 'always']`). */
  static async start(args: string[] = []): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), args);
    await redis.start();
    return redis;
  }

  /** Starts a Sentinel on a free port monitoring `master` under the name `name` (its config file in its own directory). */
  static async sentinel(master: PrivateRedis, name: string): Promise<PrivateRedis> {
    const port = await freePort();
    const redis = new PrivateRedis(port, []);
    const conf = join(redis.#dir, 'sentinel.conf');
    writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${redis.#dir}\nsentinel monitor ${name} 127.0.0.1 ${master.port} 1\n`);
    redis.#command = ['redis-server', conf, '--sentinel'];
    await redis.start();
    return redis;
  }

  /**
   * Starts a server speaking only TLS (`rediss://`, no client certificates) on a free port, with a
   * self-signed certificate for 127.0.0.1 made by openssl (`caFile`).
   */
  static async startTls(): Promise<PrivateRedis> {
    const port = await freePort();
    const redis = new PrivateRedis(port, [], 'rediss');
    const [cert, key] = [join(redis.#dir, 'tls.pem'), join(redis.#dir, 'tls.key')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
    redis.caFile = cert;
    redis.#command = [
      'redis-server', '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--dir', redis.#dir, '--save', '',
      '--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no',
    ];
    await redis.start();
    return redis;
  }

  /** Starts the server again (same port, same data directory) and waits until it answers PING. */
  async start(): Promise<void> {
    if (this.#child) return;
    const [command, ...args] = this.#command ?? ['redis-server', '--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.#dir, '--save', '', ...this.#args];
    this.#child = spawn(command!, args, { stdio: 'ignore' });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const tls = this.caFile ? { tls: { ca: readFileSync(this.caFile) } } : {};
      const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...tls });
      let refused = false;
      // A server with a password (`--requirepass`) answers, only not to a stranger.
      client.on('error', (err: Error) => (refused ||= err.message.startsWith('NOAUTH')));
      try {
        await client.connect();
        await client.ping();
        return;
      } catch (err) {
        if (refused) return;
        if (Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        client.disconnect();
      }
    }
  }

  /** Stops the server (SIGTERM) and waits for the process to end. */
  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }

  /** Kills the server (SIGKILL: no shutdown save, no final fsync) and waits for the process to end. */
  async crash(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Stops the server and removes its data directory. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** `store` whose `close()` also deletes every key under `prefix` on the Redis at `url` (tests leave nothing behind). */
export function deletingPrefixOnClose<T extends { close(): Promise<void> }>(store: T, prefix: string, url = SHARED_REDIS_URL): T {
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await deletePrefix(url, prefix);
  };
  return store;
}

/**
 * A `describe` block whose tests run on a Redis of their own started with `--appendonly yes
 * --appendfsync always` (what makes a 201 survive a Redis crash): `define` gets the server (started
 * before the block's tests, disposed after them).
 */
export function onRedisWithAof(define: (server: () => PrivateRedis) => void): void {
  describe('on a Redis with appendonly yes, appendfsync always', () => {
    let server: PrivateRedis | undefined;
    beforeAll(async () => {
      server = await PrivateRedis.start(['--appendonly', 'yes', '--appendfsync', 'always']);
    }, 30_000);
    afterAll(async () => {
      await server?.dispose();
    });
    define(() => {
      if (!server) throw new Error('the Redis with AOF is not started');
      return server;
    });
  });
}

/**
 * A Redis Cluster of three masters (no replicas) on loopback, for the contract suites: three
 * `redis-server --cluster-enabled yes` processes on free ports (and free bus ports), joined and
 * given the 16384 slots by `redis-cli --cluster create`. Every store's keys carry one hash tag, so
 * they all live on one master; the others prove the client follows the slot map.
 */
export class LocalRedisCluster {
  /** The seed nodes (`storage.redis.cluster`). */
  readonly nodes: Array<{ host: string; port: number }>;
  /** A URL of one node (`storage.url`: its credentials apply to every node). */
  readonly url: string;
  readonly #servers: PrivateRedis[];

  private constructor(servers: PrivateRedis[]) {
    this.#servers = servers;
    this.nodes = servers.map((server) => ({ host: '127.0.0.1', port: server.port }));
    this.url = servers[0]!.url;
  }

  /** Starts the three masters, creates the cluster, and waits until every node says `cluster_state:ok`. */
  static async start(): Promise<LocalRedisCluster> {
    const servers: PrivateRedis[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        servers.push(await PrivateRedis.start(['--cluster-enabled', 'yes', '--cluster-port', String(await freePort()), '--cluster-config-file', `nodes-${randomUUID()}.conf`, '--appendonly', 'no']));
      }
      await promisify(execFile)('redis-cli', ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 60_000 });
      const cluster = new LocalRedisCluster(servers);
      await cluster.#untilOk();
      return cluster;
    } catch (err) {
      await Promise.all(servers.map((server) => server.dispose()));
      throw err;
    }
  }

  async #untilOk(): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const states = await Promise.all(this.#servers.map(async (server) => {
        const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        client.on('error', () => {});
        try {
          await client.connect();
          return /cluster_state:ok/.test(await client.cluster('INFO'));
        } catch {
          return false;
        } finally {
          client.disconnect();
        }
      }));
      if (states.every(Boolean)) return;
      if (Date.now() > deadline) throw new Error('the local Redis Cluster did not reach cluster_state:ok');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Stops the three servers and removes their data. */
  async dispose(): Promise<void> {
    await Promise.all(this.#servers.map((server) => server.dispose()));
  }
}

/** A `describe` block whose tests run on a local three-master Redis Cluster (`define` gets it; started before, disposed after). */
export function onRedisCluster(define: (cluster: () => LocalRedisCluster) => void): void {
  describe('on a three-master Redis Cluster', () => {
    let cluster: LocalRedisCluster | undefined;
    beforeAll(async () => {
      cluster = await LocalRedisCluster.start();
    }, 90_000);
    afterAll(async () => {
      await cluster?.dispose();
    });
    define(() => {
      if (!cluster) throw new Error('the Redis Cluster is not started');
      return cluster;
    });
  });
}

/** Two stores of one prefix (two replicas), opened for `body` and closed after it, whatever it does. */
export async function withReplicas<S extends { open(): Promise<void>; close(): Promise<void> }>(one: S, two: S, body: (one: S, two: S) => Promise<void>): Promise<void> {
  await one.open();
  await two.open();
  try {
    await body(one, two);
  } finally {
    await one.close();
    await two.close();
  }
}
