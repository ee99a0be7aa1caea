/**
 * What the MCP front shares between replicas, so that no request needs the replica that served the
 * one before (no session affinity): the 2025-era sessions (id → principal, expiring after
 * `mcp.idleTimeout` without a request, at most `mcp.maxSessions`) and the follow lists: for each
 * owner (a 2025 session, or a principal for 2026-07-28 clients) the commands whose events it is
 * pushed, each with the log position the command was followed at and the last event delivered.
 * The log is the buffer: a stream that opens (on any replica) replays each follow from its last
 * delivered event, or from where it was followed; no event is copied here.
 *
 * Adapters: `MemoryFollowStore` (one process: `memory` and `sqlite` drivers) and
 * `RedisFollowStore` (shared); both pass `followStoreContract`.
 */

/** Commands followed per owner at most (the oldest is dropped beyond). */
export const MAX_FOLLOWS = 100;

/** One followed command of an owner. */
export interface Follow {
  correlationId: string;
  /** The log position when it was followed (the command was submitted after): replay starts after it. */
  afterPosition: number;
  /** The id of the last event delivered for it, once one was. */
  lastEventId?: string;
}

/** Who follows: a 2025-era session or a principal (2026-07-28 clients have no session). */
export type FollowOwner = `session:${string}` | `principal:${string}`;

/** The bounds the store keeps. */
export interface FollowStoreLimits {
  /** Sessions open at once; `openSession` refuses beyond. */
  maxSessions: number;
  /** Sessions one principal may hold at once; default `maxSessions` (no per-principal bound). */
  maxSessionsPerPrincipal?: number;
  /** ms without a request before a session (and its follow list) is forgotten. */
  idleTimeoutMs: number;
  /** Follows kept per owner; the oldest is dropped beyond. */
  maxFollows: number;
}

/** What `openSession` did. */
export type SessionOpening = 'opened' | 'full' | 'principal-full';

/** The shared MCP state (a port: memory and Redis adapters). */
export interface FollowStore {
  open(): Promise<void>;
  /**
   * Records a new session of `principal`: `'opened'`, or `'full'` when `maxSessions` are open, or
   * `'principal-full'` when `principal` holds `maxSessionsPerPrincipal` already.
   */
  openSession(id: string, principal: string): Promise<SessionOpening>;
  /** The principal of a live session, its idle clock restarted; undefined when unknown or expired. */
  touchSession(id: string): Promise<string | undefined>;
  /** Forgets a session and its follow list (idempotent). */
  endSession(id: string): Promise<void>;
  /** Live sessions. */
  sessionCount(): Promise<number>;
  /** Adds a follow to `owner`'s list (the oldest beyond `maxFollows` is dropped). */
  follow(owner: FollowOwner, correlationId: string, afterPosition: number): Promise<void>;
  /** `owner`'s follows, oldest first. */
  follows(owner: FollowOwner): Promise<Follow[]>;
  /** Records the last event delivered for one follow (no-op when it is no longer followed). */
  delivered(owner: FollowOwner, correlationId: string, eventId: string): Promise<void>;
  /** Drops one follow (its command settled: a terminal event was delivered). */
  unfollow(owner: FollowOwner, correlationId: string): Promise<void>;
  close(): Promise<void>;
}

/** The in-process adapter. */
export class MemoryFollowStore implements FollowStore {
  readonly #limits: FollowStoreLimits;
  readonly #now: () => number;
  readonly #sessions = new Map<string, { principal: string; expiresMs: number }>();
  readonly #follows = new Map<FollowOwner, { expiresMs: number; list: Map<string, Follow> }>();

  constructor(limits: FollowStoreLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  async open(): Promise<void> {}

  async openSession(id: string, principal: string): Promise<SessionOpening> {
    this.#sweep();
    if (this.#sessions.size >= this.#limits.maxSessions) return 'full';
    const perPrincipal = this.#limits.maxSessionsPerPrincipal ?? this.#limits.maxSessions;
    let held = 0;
    for (const session of this.#sessions.values()) if (session.principal === principal) held++;
    if (held >= perPrincipal) return 'principal-full';
    this.#sessions.set(id, { principal, expiresMs: this.#now() + this.#limits.idleTimeoutMs });
    return 'opened';
  }

  async touchSession(id: string): Promise<string | undefined> {
    const session = this.#sessions.get(id);
    if (!session || session.expiresMs <= this.#now()) return undefined;
    session.expiresMs = this.#now() + this.#limits.idleTimeoutMs;
    const follows = this.#follows.get(`session:${id}`);
    if (follows) follows.expiresMs = session.expiresMs;
    return session.principal;
  }

  async endSession(id: string): Promise<void> {
    this.#sessions.delete(id);
    this.#follows.delete(`session:${id}`);
  }

  async sessionCount(): Promise<number> {
    this.#sweep();
    return this.#sessions.size;
  }

  async follow(owner: FollowOwner, correlationId: string, afterPosition: number): Promise<void> {
    const entry = this.#live(owner) ?? { expiresMs: 0, list: new Map<string, Follow>() };
    entry.expiresMs = this.#now() + this.#limits.idleTimeoutMs;
    entry.list.set(correlationId, { correlationId, afterPosition });
    while (entry.list.size > this.#limits.maxFollows) entry.list.delete(entry.list.keys().next().value as string);
    this.#follows.set(owner, entry);
  }

  async follows(owner: FollowOwner): Promise<Follow[]> {
    return [...(this.#live(owner)?.list.values() ?? [])].map((f) => ({ ...f }));
  }

  async delivered(owner: FollowOwner, correlationId: string, eventId: string): Promise<void> {
    const follow = this.#live(owner)?.list.get(correlationId);
    if (follow) follow.lastEventId = eventId;
  }

  async unfollow(owner: FollowOwner, correlationId: string): Promise<void> {
    this.#follows.get(owner)?.list.delete(correlationId);
  }

  async close(): Promise<void> {}

  #live(owner: FollowOwner) {
    const entry = this.#follows.get(owner);
    if (entry && entry.expiresMs <= this.#now()) {
      this.#follows.delete(owner);
      return undefined;
    }
    return entry;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, session] of this.#sessions) {
      if (session.expiresMs <= now) void this.endSession(id);
    }
  }
}
