/**
 * The `serve` log destination's metric (`stdout-log.ts`): log lines dropped because stdout was not read.
 */
import { Counter, type Registry } from 'prom-client';

/** Registers `proto_gateway_stdout_lines_dropped_total`, read from `droppedLines()` when scraped. */
export function stdoutMetrics(registry: Registry, destination: { droppedLines(): number }): void {
  let counted = 0;
  new Counter({
    name: 'proto_gateway_stdout_lines_dropped_total',
    help: 'Log lines dropped because stdout did not take them (a pipe nobody reads) while the destination held its limit.',
    registers: [registry],
    collect() {
      const dropped = destination.droppedLines();
      this.inc(dropped - counted);
      counted = dropped;
    },
  });
}
