/**
 * The ingestion feature: one ingestor per backend (a proto follower, or one poller per legacy
 * `records` entry), and on `storage.driver: redis` the leases that let one replica follow each
 * backend. Joins `life`.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { BackendDirectory } from '../backends/directory.ts';
import type { StorageConfig } from '../config/types.ts';
import type { Lifecycle } from '../lifecycle.ts';
import type { EventLog } from '../log/EventLog.ts';
import { ingestMetrics } from '../metrics/ingest.ts';
import { redisStoreOptions } from '../storage/redis.ts';
import { IngestorSet } from './ingestors.ts';
import { RedisIngestionLeases } from './redis-leases.ts';

/** What ingestion needs. */
export interface IngestionDeps {
  storage: StorageConfig;
  /** `events.maxEventBytes`. */
  maxEventBytes: number;
  backends: BackendDirectory;
  log: EventLog;
  publicUrl: string;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The ingestors of every backend, with their leases on Redis. */
export async function createIngestion(deps: IngestionDeps): Promise<IngestorSet> {
  const { life } = deps;
  const leases = deps.storage.driver === 'redis' ? await openIngestionLeases(deps.storage) : undefined;
  if (leases) life.add({ close: () => leases.close() });
  return life.add(new IngestorSet({
    backends: deps.backends, log: deps.log, publicUrl: deps.publicUrl, logger: deps.logger, metrics: ingestMetrics(deps.registry), maxEventBytes: deps.maxEventBytes, ...(leases && { leases }),
  }));
}

/** The ingestion leases of `storage.driver: redis` (one replica follows each backend), connected. */
async function openIngestionLeases(storage: StorageConfig): Promise<RedisIngestionLeases> {
  const leases = new RedisIngestionLeases(redisStoreOptions(storage));
  await leases.open();
  return leases;
}
