/**
 * How an event ends the A2A task of the command it is correlated with (issue #13; terminal types:
 * DESIGN.md, Conventions). Transport-neutral: the MCP front's "send and wait" has the same need.
 */

/** The verdict an event gives on its command: `failed`, `completed`, or undefined (keep waiting). */
export type CommandOutcome = 'failed' | 'completed' | undefined;

/** What is known of a command type's results, from the catalogue and (for legacy commands) the config. */
export interface OutcomeRules {
  /** Event types listed in the command schema's `produces`. */
  produces: readonly string[];
  /** The legacy command's configured success type. */
  successType?: string;
  /** The legacy command's configured failure type. */
  failureType?: string;
}

const FAILURE = /(Failed|Rejected)(V\d+)?$/;
const SUCCESS = /(Completed|Succeeded)(V\d+)?$/;

/**
 * The verdict of one event type: a failure type (configured, `*Failed`, `*Rejected`) fails the
 * command; the configured success type, a `produces` type or `*Completed`/`*Succeeded` completes it.
 * Failure wins when a type matches both (a `produces` list may name the failure type too).
 */
export function commandOutcome(eventType: string, rules: OutcomeRules): CommandOutcome {
  if (eventType === rules.failureType || FAILURE.test(eventType)) return 'failed';
  if (eventType === rules.successType || rules.produces.includes(eventType) || SUCCESS.test(eventType)) return 'completed';
  return undefined;
}
