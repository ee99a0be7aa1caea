/** The gRPC feature (present when the `grpc` section is): the gRPC server over the live tail and the command pipeline, joined to `life`. */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import type { GatewayConfig } from '../../config/types.ts';
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Lifecycle } from '../../lifecycle.ts';
import type { EventLog } from '../../log/EventLog.ts';
import { grpcMetrics } from '../../metrics/grpc.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { GrpcBridge } from './grpc-bridge.ts';

/** What gRPC needs. */
export interface GrpcDeps {
  config: GatewayConfig;
  tail: LiveTail;
  log: EventLog;
  aliases: AliasSource;
  ingestion: CommandIngestion;
  /** The one admission path: callers, RPC scopes and the stream pool. */
  admission: Admission;
  /** Per-caller catalogues: what each caller's ListEvents and Subscribe carry. */
  access?: Pick<AccessRules, 'eventsSeenBy'>;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The gRPC bridge, or undefined when the `grpc` section is absent. */
export function createGrpc(deps: GrpcDeps): GrpcBridge | undefined {
  const { config } = deps;
  if (!config.grpc) return undefined;
  return deps.life.add(new GrpcBridge({
    config: config.grpc,
    admission: deps.admission,
    maxMessageBytes: config.server.bodyLimitBytes,
    maxJsonDepth: config.server.maxJsonDepth,
    tail: deps.tail,
    log: deps.log,
    events: config.events,
    aliases: deps.aliases,
    ingestion: deps.ingestion,
    maxBufferedBytes: config.sse.maxBufferedBytes,
    closeOnTerminal: config.sse.closeOnTerminal,
    metrics: grpcMetrics(deps.registry),
    logger: deps.logger.child({ component: 'grpc' }),
    access: deps.access,
  }));
}
