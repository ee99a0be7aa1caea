/**
 * Metrics of the gRPC bridge. Labels are bounded: `method` is one of the three RPCs (and the
 * standard health and reflection services are not counted), `code` a gRPC status name.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The gRPC metrics, as the bridge reports into them (plain values; the bridge's streams report `sent` and `replay`). */
export interface GrpcMetrics {
  /** A Subscribe resume point was found (`replayed`) or not (`reset`): `proto_gateway_grpc_replays_total{outcome}`. */
  replay(outcome: 'replayed' | 'reset'): void;
  /** `count` events written to Subscribe streams: `proto_gateway_grpc_messages_sent_total`. */
  sent(count: number): void;
  /** A Subscribe stream opened (+1) or ended (-1): `proto_gateway_grpc_streams`. */
  streams(delta: 1 | -1): void;
  /** An RPC ended with `code`: `proto_gateway_grpc_rpcs_total{method,code}`. */
  rpc(method: string, code: string): void;
}

/** Registers the gRPC metrics in `registry` (once per registry, at boot). */
export function grpcMetrics(registry: Registry): GrpcMetrics {
  const registers = [registry];
  const streams = new Gauge({ name: 'proto_gateway_grpc_streams', help: 'Open gRPC Subscribe streams.', registers });
  const sent = new Counter({ name: 'proto_gateway_grpc_messages_sent_total', help: 'Events written to gRPC Subscribe streams.', registers });
  const rpcs = new Counter({ name: 'proto_gateway_grpc_rpcs_total', help: 'gRPC calls by method and final status code.', labelNames: ['method', 'code'], registers });
  const replays = new Counter({ name: 'proto_gateway_grpc_replays_total', help: 'Subscribe resumes after last_event_id: replayed, or reset (id no longer in the log).', labelNames: ['outcome'], registers });
  return {
    streams: (delta) => streams.inc(delta),
    rpc: (method, code) => rpcs.inc({ method, code }),
    sent: (count) => sent.inc(count),
    replay: (outcome) => replays.inc({ outcome }),
  };
}
