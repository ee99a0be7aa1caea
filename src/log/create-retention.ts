/**
 * Log retention: the pruner deleting events past `events.retention`, never past a reader's
 * durable position (`readers`: the webhook fan-out's). Joins `life`.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { EventsConfig } from '../config/types.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { retentionHeldBack } from '../metrics/log.ts';
import type { EventLog } from './EventLog.ts';
import { Pruner, type PrunerOptions } from './pruner.ts';

/** What retention needs. */
export interface RetentionDeps {
  log: EventLog;
  retention: EventsConfig['retention'];
  /** Positions retention never passes. */
  readers: NonNullable<PrunerOptions['readers']>;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The log's pruner, joined to `life`. */
export function createRetention(deps: RetentionDeps): Pruner {
  return deps.life.add(new Pruner(deps.log, deps.retention, deps.logger, { readers: deps.readers, onHeldBack: retentionHeldBack(deps.registry) }));
}
