/**
 * A subscription filtered by a command's correlation id also follows the backend's own ids for that
 * command (its correlation aliases): those known when it opens widen the filter here (so replay
 * finds them); those learnt later reach it through `LiveTail.addAlias`.
 */
import type { EventFilter } from '../../log/EventLog.ts';

/** Where aliases come from (the command store's, through `AliasNotifier`). */
export interface AliasSource {
  aliasesOf(id: string): Promise<string[]>;
}

/**
 * `filter` with its `correlationId` turned into `correlationIds` (the id and its known aliases),
 * and the id the subscription follows (`aliasesFor`); unchanged without a correlation id or source.
 */
export async function followAliases(filter: EventFilter, aliases: AliasSource | undefined): Promise<{ filter: EventFilter; aliasesFor?: string }> {
  const id = filter.correlationId;
  if (id === undefined || !aliases) return { filter };
  const { correlationId: _id, ...rest } = filter;
  const known = (await aliases.aliasesOf(id)).filter((alias) => alias !== id);
  return { filter: { ...rest, correlationIds: [id, ...known] }, aliasesFor: id };
}
