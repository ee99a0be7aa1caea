/**
 * The in-memory `CommandStore` (`storage.driver: memory`): for tests and throwaway runs. Same
 * contract as the SQLite store; nothing survives `close()`. Values are copied in and out, as a
 * durable store would, so no caller shares an object with the store.
 *
 * Limits: idempotency records live for the idempotency window and are purged by the sweeper; the
 * outbox holds what was accepted and not yet delivered (both bounded by the ingestion rate limit
 * and the window, not by a count).
 */
import {
  type AcceptAnswer,
  type AcceptItem,
  type ClaimedOutboxEntry,
  MAX_ALIASES_PER_COMMAND,
  type CommandStore,
  type IdempotencyRecord,
  type NewOutboxEntry,
  type OutboxEntry,
} from './CommandStore.ts';
import { DueIndex } from './due-index.ts';

/**
 * An outbox entry as the store keeps it: its envelope as JSON text, parsed only when the entry is
 * handed out (`entryOf`). Most entries never are: the group commit claims them at accept and hands
 * the dispatcher the caller's own, so the store neither parses nor keeps an object graph for them.
 */
interface StoredEntry extends Omit<OutboxEntry, 'command'> {
  commandJson: string;
}

/** A `CommandStore` held in process memory. */
export class MemoryCommandStore implements CommandStore {
  /**
   * Each id's record as its JSON, expiry first (`recordText`): a record is kept for
   * the whole idempotency window, and one flat string per command is far less for the garbage
   * collector to copy and trace than an object graph (under commands-e2e the memory gateway held
   * hundreds of thousands of them).
   */
  readonly #records = new Map<string, string>();
  /** By seq; insertion order is seq order. */
  readonly #outbox = new Map<number, StoredEntry>();
  /** The outbox's entries of each backend in due order (claims and `nextDueMs` read these, not the whole outbox). */
  readonly #dueOrder = new Map<string, DueIndex<StoredEntry>>();
  readonly #aliases = new Map<string, string[]>();
  /** Seqs whose last claim has not ended (no completion or reschedule since). */
  readonly #claimed = new Set<number>();
  #lastSeq = 0;
  #open = false;

  async open(): Promise<void> {
    this.#open = true;
  }

  async close(): Promise<void> {
    this.#open = false;
    this.#records.clear();
    this.#outbox.clear();
    this.#dueOrder.clear();
    this.#aliases.clear();
    this.#claimed.clear();
  }

  async accept(record: IdempotencyRecord, entry: NewOutboxEntry, nowMs: number): Promise<IdempotencyRecord | undefined> {
    this.#assertOpen();
    const live = this.#live(record.id, nowMs);
    if (live) return live;
    this.#records.set(record.id, recordText(record));
    this.#insert(entry);
    return undefined;
  }

  async acceptBatch(items: AcceptItem[], nowMs: number): Promise<AcceptAnswer[]> {
    this.#assertOpen();
    return items.map(({ record, entry, leaseMs, commandJson }) => {
      const live = this.#live(record.id, nowMs);
      if (live) return { holder: live };
      this.#records.set(record.id, recordText(record));
      // Claimed in the same step, as claimDue would: due again only when the lease runs out.
      const stored = this.#insert(entry, commandJson, leaseMs === undefined ? undefined : nowMs + leaseMs);
      if (leaseMs !== undefined) this.#claimed.add(stored.seq);
      return { seq: stored.seq };
    });
  }

  async claim(record: IdempotencyRecord, nowMs: number): Promise<IdempotencyRecord | undefined> {
    this.#assertOpen();
    const live = this.#live(record.id, nowMs);
    if (live) return live;
    this.#records.set(record.id, recordText(record));
    return undefined;
  }

  async find(id: string, nowMs: number): Promise<IdempotencyRecord | undefined> {
    this.#assertOpen();
    return this.#live(id, nowMs);
  }

  async purgeExpired(nowMs: number): Promise<number> {
    this.#assertOpen();
    let removed = 0;
    for (const [id, text] of this.#records) {
      if (expiryOf(text) > nowMs) continue;
      this.#records.delete(id);
      removed++;
    }
    return removed;
  }

  async enqueue(entry: NewOutboxEntry): Promise<OutboxEntry> {
    this.#assertOpen();
    return entryOf(this.#insert(entry));
  }

  async due(backend: string, nowMs: number, limit: number): Promise<OutboxEntry[]> {
    this.#assertOpen();
    const index = this.#dueOrder.get(backend);
    const entries = index?.take(nowMs, limit) ?? [];
    // A read only: each goes back where it was.
    for (const entry of entries) index!.put(entry);
    return entries.map(entryOf);
  }

  async claimDue(backend: string, nowMs: number, limit: number, leaseMs: number): Promise<ClaimedOutboxEntry[]> {
    this.#assertOpen();
    const index = this.#dueOrder.get(backend);
    // Read and lease in one synchronous step: two concurrent claimers never see one entry due.
    return (index?.take(nowMs, limit) ?? []).map((entry) => {
      const claimed = { ...entryOf(entry), reclaimed: this.#claimed.has(entry.seq) };
      // A claimed entry is due again when its lease runs out (a reschedule sets the real next attempt).
      entry.nextAttemptMs = nowMs + leaseMs;
      index!.put(entry);
      this.#claimed.add(entry.seq);
      return claimed;
    });
  }

  async reschedule(seq: number, attempts: number, nextAttemptMs: number, lastError: string): Promise<void> {
    this.#assertOpen();
    const entry = this.#outbox.get(seq);
    if (entry) {
      Object.assign(entry, { attempts, nextAttemptMs, lastError });
      this.#dueOrder.get(entry.backend)!.put(entry);
    }
    this.#claimed.delete(seq);
  }

  async complete(seq: number): Promise<void> {
    this.#assertOpen();
    const entry = this.#outbox.get(seq);
    if (!entry) return;
    this.#outbox.delete(seq);
    this.#claimed.delete(seq);
    const index = this.#dueOrder.get(entry.backend)!;
    index.delete(seq);
    if (index.size === 0) this.#dueOrder.delete(entry.backend);
  }

  async nextDueMs(): Promise<number | undefined> {
    this.#assertOpen();
    let earliest: number | undefined;
    for (const index of this.#dueOrder.values()) earliest = Math.min(earliest ?? Infinity, index.earliestMs() ?? Infinity);
    return earliest;
  }

  async backends(): Promise<string[]> {
    this.#assertOpen();
    return [...new Set([...this.#outbox.values()].map((entry) => entry.backend))];
  }

  async depth(backend?: string): Promise<number> {
    this.#assertOpen();
    if (backend === undefined) return this.#outbox.size;
    let n = 0;
    for (const entry of this.#outbox.values()) if (entry.backend === backend) n += 1;
    return n;
  }

  async rememberAlias(id: string, alias: string): Promise<void> {
    this.#assertOpen();
    const known = this.#aliases.get(id) ?? [];
    if (known.includes(alias) || known.length >= MAX_ALIASES_PER_COMMAND) return;
    this.#aliases.set(id, [...known, alias]);
  }

  async aliasesOf(id: string): Promise<string[]> {
    this.#assertOpen();
    return [...(this.#aliases.get(id) ?? [])];
  }

  /** The live record of `id` at `nowMs` (a fresh copy), or undefined. */
  #live(id: string, nowMs: number): IdempotencyRecord | undefined {
    const text = this.#records.get(id);
    return text !== undefined && expiryOf(text) > nowMs ? (JSON.parse(text) as IdempotencyRecord) : undefined;
  }

  /**
   * Stores a copy of `entry` (`commandJson`: its envelope's JSON, when already made; every other
   * field is a primitive), due at `dueMs` when given (a claim's lease end), else at its `nextAttemptMs`.
   */
  #insert({ command, ...entry }: NewOutboxEntry, commandJson = JSON.stringify(command), dueMs?: number): StoredEntry {
    const stored: StoredEntry = { ...entry, commandJson, seq: ++this.#lastSeq };
    if (dueMs !== undefined) stored.nextAttemptMs = dueMs;
    this.#outbox.set(stored.seq, stored);
    let index = this.#dueOrder.get(stored.backend);
    if (!index) {
      index = new DueIndex();
      this.#dueOrder.set(stored.backend, index);
    }
    index.put(stored);
    return stored;
  }

  #assertOpen(): void {
    if (!this.#open) throw new Error('MemoryCommandStore is not open');
  }
}

/** The start of a record as the store keeps it (`recordText`). */
const EXPIRY_FIRST = '{"expiresMs":';

/** A record as the store keeps it: its JSON with `expiresMs` first (one flat string, as `JSON.stringify` makes it). */
function recordText(record: IdempotencyRecord): string {
  return JSON.stringify({ expiresMs: record.expiresMs, id: record.id, principal: record.principal, fingerprint: record.fingerprint, answer: record.answer });
}

/** The expiry of a record kept as `recordText`, read without parsing the rest. */
function expiryOf(text: string): number {
  return Number.parseInt(text.slice(EXPIRY_FIRST.length), 10);
}

/** A stored entry as the store hands it out: a copy with its envelope parsed. */
function entryOf({ commandJson, ...entry }: StoredEntry): OutboxEntry {
  return { ...entry, command: JSON.parse(commandJson) as OutboxEntry['command'] };
}
