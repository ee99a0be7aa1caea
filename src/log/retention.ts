/**
 * The arithmetic of `RetainingLog.prune` (events.retention), shared by every store. A limit that is
 * 0, negative or not finite disables its rule ("0 disables"), so `{ maxEvents: 0, maxAgeMs: 0 }`
 * prunes nothing.
 */

/** The retention limits: a count of events and an age in milliseconds (by append time). */
export interface RetentionLimits {
  maxEvents: number;
  maxAgeMs: number;
  /**
   * Events at positions after this one are kept whatever the rules say: a durable reader (the
   * webhook fan-out) has not read them yet. Undefined = no such reader.
   */
  keepAfter?: number;
}

/** What a retention pass did: events deleted, and events the rules would delete but `keepAfter` kept. */
export interface PruneResult {
  removed: number;
  heldBack: number;
}

/** Of a prefix of `wanted` events the rules would delete, the part at or before `keepAfter` (`deletable`) and the rest. */
export function splitAtFloor(wanted: number, deletable: number): PruneResult {
  const removed = Math.min(wanted, deletable);
  return { removed, heldBack: wanted - removed };
}

/** Events appended strictly before this epoch-ms instant are expired; undefined when the age rule is off. */
export function expiryCutoffMs(limits: RetentionLimits, nowMs: number): number | undefined {
  return isActive(limits.maxAgeMs) ? nowMs - limits.maxAgeMs : undefined;
}

/** How many of the oldest events exceed `maxEvents` in a log of `count` events (0 when the rule is off). */
export function excessEvents(limits: RetentionLimits, count: number): number {
  return isActive(limits.maxEvents) ? Math.max(0, count - Math.floor(limits.maxEvents)) : 0;
}

function isActive(limit: number): boolean {
  return Number.isFinite(limit) && limit > 0;
}
