/**
 * Metrics of the Redis store (`storage.driver: redis`): every command's latency and failures, by
 * command name (a bounded label: Redis's own command names). Blocking reads (`xread` of the live
 * fan-out) include the time they waited for new events.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { RedisObserver } from '../config/types.ts';

/** Registers `proto_gateway_redis_command_duration_seconds{command}` and `proto_gateway_redis_errors_total{command}`; returns the observer the connections report to. */
export function redisMetrics(registry: Registry): RedisObserver {
  const registers = [registry];
  const duration = new Histogram({
    name: 'proto_gateway_redis_command_duration_seconds',
    help: 'Duration of Redis commands sent by the stores, by command.',
    labelNames: ['command'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers,
  });
  const errors = new Counter({ name: 'proto_gateway_redis_errors_total', help: 'Redis commands that failed (connection lost, timeout, script error), by command.', labelNames: ['command'], registers });
  return (command, seconds, ok) => {
    duration.observe({ command }, seconds);
    if (!ok) errors.inc({ command });
  };
}
