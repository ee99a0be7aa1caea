/**
 * The live tail: one follower of the log that feeds every push transport (SSE, gRPC, MCP, A2A),
 * following the correlation aliases the dispatcher learns. Joins `life`.
 */
import type { Logger } from 'pino';
import type { Lifecycle } from '../../lifecycle.ts';
import { LiveTail, type TailSource } from './live-tail.ts';

/** What the live tail needs. */
export interface LiveTailDeps {
  log: TailSource;
  /** Told each alias a backend gives a command id (`(id, alias)`). */
  aliases: { watch(watcher: (id: string, alias: string) => void): unknown };
  logger: Logger;
  life: Lifecycle;
}

/** The live tail, joined to `life`. */
export function createLiveTail(deps: LiveTailDeps): LiveTail {
  const tail = deps.life.add(new LiveTail({ source: deps.log, logger: deps.logger }));
  deps.aliases.watch((id, alias) => tail.addAlias(id, alias));
  return tail;
}
