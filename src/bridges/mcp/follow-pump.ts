/**
 * Feeds one push stream (a 2025 session's GET stream, or a 2026-07-28 `subscriptions/listen`
 * stream) with the events of the commands its owner follows, on whichever replica holds it. The
 * follow list lives in the `FollowStore`, so a command sent through another replica is picked up
 * here: the list is re-read every `FOLLOW_POLL_MS` (the bound on how late a follow added on another
 * replica is seen; nothing is missed meanwhile, since each follow replays from the log), and at
 * once when it was added on this one (`wake`). Each follow is a live tail
 * subscription on the command id and its correlation aliases, replaying after the last event
 * delivered for it (or after the position it was followed at), and is dropped from the list after
 * its terminal event was delivered.
 */
import type { EventVisibility } from '../../edge/access-rules.ts';
import type { Logger } from 'pino';
import type { CloudEvent } from '../../log/EventLog.ts';
import { followAliases, type AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { openTailStream, type TailStream } from '../live-tail/tail-stream.ts';
import type { Follow, FollowOwner, FollowStore } from './follow-store.ts';

/** How often the follow list is re-read while a stream is open, in ms. */
export const FOLLOW_POLL_MS = 250;
/** Bytes of events queued for one follow before it is ended as slow (the log keeps them). */
const MAX_BUFFERED_BYTES = 1 << 20;

/** What a pump is built from. */
export interface FollowPumpOptions {
  /** Whose follow list to serve; absent = only `pinned`. */
  owner?: FollowOwner;
  /** Follows named by the stream itself (a correlation id the client asked for), not in the store. */
  pinned?: Follow[];
  store: FollowStore;
  tail: LiveTail;
  aliases: AliasSource;
  /** The events the stream's caller sees (per-caller catalogues); default every event. */
  visible?: EventVisibility;
  /** Writes one event to the stream; resolves once written (false: the stream is gone). */
  send(correlationId: string, event: CloudEvent): Promise<boolean>;
  logger: Logger;
}

/** A running pump; `close()` (idempotent) ends its subscriptions. */
export class FollowPump {
  readonly #options: FollowPumpOptions;
  readonly #active = new Map<string, TailStream>();
  /** Follows whose subscription is being opened (two refreshes never open one twice). */
  readonly #opening = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: FollowPumpOptions) {
    this.#options = options;
  }

  /** Re-reads the follow list now (a follow was just added on this replica: no need to wait for the poll). */
  wake(): void {
    void this.#refresh().catch((err: unknown) => this.#options.logger.debug({ err }, 'mcp follow list not read'));
  }

  /** Opens the follows listed now and starts watching the list. */
  async start(): Promise<void> {
    await this.#refresh();
    if (!this.#closed) this.#timer = setInterval(() => void this.#refresh().catch((err: unknown) => this.#options.logger.debug({ err }, 'mcp follow list not read')), FOLLOW_POLL_MS);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    for (const stream of this.#active.values()) stream.close();
    this.#active.clear();
  }

  async #refresh(): Promise<void> {
    if (this.#closed) return;
    const { owner, pinned = [] } = this.#options;
    const follows = [...pinned, ...(owner !== undefined ? await this.#options.store.follows(owner) : [])];
    for (const follow of follows) {
      if (!this.#active.has(follow.correlationId) && !this.#opening.has(follow.correlationId) && !this.#closed) {
        this.#opening.add(follow.correlationId);
        await this.#open(follow).finally(() => this.#opening.delete(follow.correlationId));
      }
    }
  }

  async #open(follow: Follow): Promise<void> {
    const { store, tail, aliases } = this.#options;
    // A pinned follow is not in the store: its progress is the client's (its Last-Event-ID).
    const owner = this.#options.pinned?.includes(follow) ? undefined : this.#options.owner;
    const { filter, aliasesFor } = await followAliases({ correlationId: follow.correlationId }, aliases);
    const stream = openTailStream(tail, {
      transport: 'mcp',
      filter,
      visible: this.#options.visible,
      closeOnTerminal: true,
      maxBufferedBytes: MAX_BUFFERED_BYTES,
      ...(aliasesFor !== undefined && { aliasesFor }),
      ...(follow.lastEventId !== undefined ? { afterId: follow.lastEventId } : { afterPosition: follow.afterPosition }),
    });
    this.#active.set(follow.correlationId, stream);
    void (async () => {
      for await (const event of stream) {
        if (!(await this.#options.send(follow.correlationId, event))) break;
        if (owner !== undefined) await store.delivered(owner, follow.correlationId, event.id);
        else follow.lastEventId = event.id;
      }
      const reason = await stream.ended;
      // Settled: nothing more will come for it. Otherwise (slow, closed) a later stream resumes it.
      if (reason === 'terminal' && owner === undefined) return; // a pinned follow stays settled for this stream
      if (reason === 'terminal') await store.unfollow(owner as FollowOwner, follow.correlationId);
      this.#active.delete(follow.correlationId);
    })().catch((err: unknown) => {
      this.#options.logger.debug({ err }, 'mcp follow ended');
      stream.close();
      this.#active.delete(follow.correlationId);
    });
  }
}
