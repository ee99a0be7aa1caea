/** The SSE feature: `GET /events/stream` over the live tail, its hub joined to `life`, with its metrics. */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { BackendDirectory } from '../../backends/directory.ts';
import type { SseConfig } from '../../config/types.ts';
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Lifecycle } from '../../lifecycle.ts';
import { sseMetrics } from '../../metrics/sse.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { sseBridge, type SseBridge } from './sse-bridge.ts';

/** What SSE needs. */
export interface SseDeps {
  config: SseConfig;
  tail: LiveTail;
  backends: BackendDirectory;
  correlationAliases: AliasSource;
  /** Per-caller catalogues: each stream carries only what its caller sees. */
  access?: Pick<AccessRules, 'eventsSeenBy'>;
  /** The one admission path: its stream pool bounds the streams. */
  admission: Admission;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The SSE bridge (its routes), its hub joined to `life`. */
export function createSse(deps: SseDeps): SseBridge {
  const sse = sseBridge({ config: deps.config, streams: deps.admission.streams, tail: deps.tail, backends: deps.backends, metrics: sseMetrics(deps.registry), logger: deps.logger, correlationAliases: deps.correlationAliases, access: deps.access });
  deps.life.add(sse.hub);
  return sse;
}
