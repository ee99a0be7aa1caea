/**
 * The ports of command ingestion's durable state: `IdempotencyStore` (the first answer to each
 * command id, for `commands.idempotencyWindow`), `Outbox` (accepted commands not yet delivered) and
 * `CorrelationAliases` (a backend's own id for a command, when it answered with another one).
 * `CommandStore` is all three over one connection, so that accepting a command writes its
 * idempotency record and its outbox entry in ONE transaction: a crash never leaves one without the
 * other. Implemented by `memory-store.ts` and `sqlite-store.ts`; each port has one contract suite
 * in `test/commands/store-contract.ts`.
 */
import type { CloudEvent } from '../log/EventLog.ts';

/** The answer given to the first submission of a command id, replayed to identical repeats. */
export interface CommandAnswer {
  status: number;
  body: unknown;
}

/** What the gateway remembers of an accepted command id (PROTOCOL-NOTES.md, Commands: idempotency). */
export interface IdempotencyRecord {
  /** The envelope `id`. */
  id: string;
  /** The principal that submitted it: the same id from another principal is a 409. */
  principal: string;
  /** sha256 of the canonical JSON of `type`, `source`, normalised `dataschema` and `data`. */
  fingerprint: string;
  answer: CommandAnswer;
  /** Epoch ms after which the id may be used again. */
  expiresMs: number;
}

/** An accepted command waiting for delivery. */
export interface OutboxEntry {
  /** Position in the outbox, assigned by the store (strictly increasing). */
  seq: number;
  /** The envelope `id` (the correlation id of its result events). */
  id: string;
  /** The backend it is routed to. */
  backend: string;
  /** The envelope as accepted (the caller's `dataschema` included). */
  command: CloudEvent;
  principal: string;
  /** W3C trace context of the submitting request, forwarded to the backend. */
  traceparent?: string;
  acceptedMs: number;
  /** Delivery attempts made so far (0 = never tried). */
  attempts: number;
  /** Epoch ms from which the next attempt may run. */
  nextAttemptMs: number;
  /** Why the last attempt failed, if it did. */
  lastError?: string;
}

/** An outbox entry before the store gave it a `seq`. */
export type NewOutboxEntry = Omit<OutboxEntry, 'seq'>;

/** An outbox entry as `claimDue` hands it out. */
export interface ClaimedOutboxEntry extends OutboxEntry {
  /**
   * True when the entry's previous claim never ended (neither completed nor rescheduled): its
   * lease ran out because its claimer died or stalled, and this claim takes the work over.
   */
  reclaimed: boolean;
}

/** The lifecycle every store shares. */
export interface StoreLifecycle {
  /** Opens the store (creates tables). Idempotent. */
  open(): Promise<void>;
  /** Closes the store. Safe to call twice. */
  close(): Promise<void>;
}

/** The idempotency records of command ids. */
export interface IdempotencyStore extends StoreLifecycle {
  /**
   * Stores `record` unless a live record (not expired at `nowMs`) holds its id; returns that live
   * record instead, or undefined when `record` was stored. Atomic: of two concurrent claims of one
   * id exactly one is stored.
   */
  claim(record: IdempotencyRecord, nowMs: number): Promise<IdempotencyRecord | undefined>;
  /** The live record of `id`, or undefined. */
  find(id: string, nowMs: number): Promise<IdempotencyRecord | undefined>;
  /** Deletes records expired at `nowMs`; returns how many. */
  purgeExpired(nowMs: number): Promise<number>;
}

/** The durable queue of accepted, undelivered commands. */
export interface Outbox extends StoreLifecycle {
  /** Adds an entry; returns it with its `seq`. */
  enqueue(entry: NewOutboxEntry): Promise<OutboxEntry>;
  /** Up to `limit` entries of `backend` due at `nowMs` (`nextAttemptMs <= nowMs`, not claimed), earliest due first, then by seq. Reads only. */
  due(backend: string, nowMs: number, limit: number): Promise<OutboxEntry[]>;
  /**
   * Leased claim (`claim` in the issue; named apart from `IdempotencyStore.claim`): up to `limit` entries of `backend` due at `nowMs` and not claimed (or whose lease
   * has run out), earliest due first, then by seq, returned as they were. Atomically, each becomes
   * invisible to every claimer (`due`, `claimDue`) until `nowMs + leaseMs`, or until it is completed or
   * rescheduled (which ends the lease). A claimer that dies leaves its entries to come back when
   * their lease runs out, marked `reclaimed`; of two concurrent claimers, never both get one entry.
   */
  claimDue(backend: string, nowMs: number, limit: number, leaseMs: number): Promise<ClaimedOutboxEntry[]>;
  /** Records a failed attempt and ends its claim: the new attempt count, when to try next, and why it failed. */
  reschedule(seq: number, attempts: number, nextAttemptMs: number, lastError: string): Promise<void>;
  /** Removes a delivered (or finally failed) entry. Removing an unknown seq is a no-op. */
  complete(seq: number): Promise<void>;
  /** The earliest instant any entry may be claimed (its `nextAttemptMs`, or the end of its lease), or undefined when the outbox is empty. */
  nextDueMs(): Promise<number | undefined>;
  /** Every backend id that has entries. */
  backends(): Promise<string[]>;
  /** Number of entries, or of `backend`'s entries. */
  depth(backend?: string): Promise<number>;
}

/** A backend's own ids for gateway command ids (when it answered 201 with another id). */
export interface CorrelationAliases {
  /** Remembers that events correlated with `alias` belong to command `id`. Idempotent. */
  rememberAlias(id: string, alias: string): Promise<void>;
  /** The aliases of command `id` (empty when none). */
  aliasesOf(id: string): Promise<string[]>;
}

/**
 * An optional capability of a store several replicas share (Redis): every alias any replica
 * remembers is announced, so streams open on every replica follow it (README, "Several replicas").
 */
export interface AliasNotices {
  /** Calls `listener` for each alias remembered by any replica (its own included); returns the function that stops it. */
  watchAliases(listener: (id: string, alias: string) => void): Promise<() => void>;
}

/** True when `store` announces aliases across replicas. */
export function hasAliasNotices(store: object): store is AliasNotices {
  return typeof (store as Partial<AliasNotices>).watchAliases === 'function';
}

/** At most this many aliases are kept per command id (one per delivery that answered another id). */
export const MAX_ALIASES_PER_COMMAND = 8;

/** Every port over one connection, with the atomic accept of a command. */
export interface CommandStore extends IdempotencyStore, Outbox, CorrelationAliases {
  /**
   * In one transaction: claims `record.id` and, when the claim succeeds, enqueues `entry`. Returns
   * the live record that holds the id (nothing written), or undefined when both were written.
   */
  accept(record: IdempotencyRecord, entry: NewOutboxEntry, nowMs: number): Promise<IdempotencyRecord | undefined>;
  /**
   * Group commit: every item as `accept` would, in order, in ONE durable commit (one transaction on
   * sqlite; one pipelined round of scripts on Redis). Idempotency stays exact inside the batch: an
   * item whose id an earlier item of the batch took gets that item's record back. An item with
   * `leaseMs` has its new entry claimed in the same commit, as `claimDue` would claim it at `nowMs`
   * (hidden from every claimer until it is completed or rescheduled, or until `nowMs + leaseMs`),
   * so the local dispatcher takes it from memory without a second write; a claimer that dies
   * leaves it to come back when the lease runs out, marked `reclaimed`. Returns one answer per
   * item, in order.
   */
  acceptBatch(items: AcceptItem[], nowMs: number): Promise<AcceptAnswer[]>;
}

/** One command to accept: its idempotency record and its outbox entry. */
export interface AcceptItem {
  record: IdempotencyRecord;
  entry: NewOutboxEntry;
  /** Claim the new entry for the caller in the same commit, leased for this many ms; absent: enqueued unclaimed. */
  leaseMs?: number;
  /**
   * `JSON.stringify(entry.command)`, when the caller has it already (the group commit serialises
   * each envelope once, to bound its batches by bytes): a store that keeps the envelope as JSON
   * uses it instead of serialising it again. Absent: the store serialises `entry.command`.
   */
  commandJson?: string;
}

/** What `acceptBatch` answers per item: the live record holding its id (nothing written), or the seq of its new entry. */
export type AcceptAnswer = { holder: IdempotencyRecord } | { seq: number };
