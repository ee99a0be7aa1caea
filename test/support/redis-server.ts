/**
 * The Redis a test or benchmark run works on, found or brought along: the one at
 * `$PGW_TEST_REDIS_URL` (default redis://127.0.0.1:6379/0) when something answers there, otherwise
 * a private `redis-server` started on a free loopback port for the run and stopped after it. Used by
 * the vitest global setup (test/global-setup.ts) and by the benchmarks (bench/support/redis.ts);
 * imports nothing from vitest so a benchmark can use it too.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** The environment variable naming the Redis tests and benchmarks share (a `redis://` URL). */
export const TEST_REDIS_URL_ENV = 'PGW_TEST_REDIS_URL';
/** Where the shared test Redis is when `$PGW_TEST_REDIS_URL` is not set. */
export const DEFAULT_TEST_REDIS_URL = 'redis://127.0.0.1:6379/0';

/** The one line a run prints when `redis-server` is missing: which Debian package brings it. */
export const REDIS_SERVER_MISSING =
  'redis-server is not installed: the tests and benchmarks start their own Redis servers; install the Debian package redis-server (apt-get install redis-server)';

/** The Redis URL the run is configured for: `$PGW_TEST_REDIS_URL` or the default. */
export function configuredRedisUrl(): string {
  return process.env[TEST_REDIS_URL_ENV] || DEFAULT_TEST_REDIS_URL;
}

/** Whether `redis-server` can be run here. */
export function redisServerInstalled(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A free loopback TCP port (bound, read and released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether a Redis answers PING at `url` within `timeoutMs` (no retries: one connection attempt). */
export async function redisAnswers(url: string, timeoutMs = 2000): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs, enableOfflineQueue: false });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** A Redis the run uses: its URL, and `stop()` (a no-op for one that was already there). */
export interface RunRedis {
  url: string;
  /** True when this run started the server (it goes away with `stop()`). */
  started: boolean;
  stop(): Promise<void>;
  /** For a script without a finally: lets the process end while the server runs, and stops the server when it does. */
  stopAtExit(): void;
}

/**
 * The configured Redis when it answers; otherwise a `redis-server` of the run's own on a free
 * loopback port (no persistence, a temporary directory), answering before this resolves.
 */
export async function findOrStartRedis(): Promise<RunRedis> {
  const configured = configuredRedisUrl();
  if (await redisAnswers(configured)) return { url: configured, started: false, stop: async () => {}, stopAtExit: () => {} };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgw-run-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}/0`;
  const stop = async () => {
    await stopChild(child, exited);
    rmSync(dir, { recursive: true, force: true });
  };
  const stopAtExit = () => {
    child.unref();
    process.once('exit', () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    });
  };
  const deadline = Date.now() + 20_000;
  while (!(await redisAnswers(url, 500))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server on 127.0.0.1:${port} did not answer (exit code ${child.exitCode})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url, started: true, stop, stopAtExit };
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await exited;
}
