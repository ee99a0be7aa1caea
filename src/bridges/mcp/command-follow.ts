/**
 * Following one command's events for an MCP session: a pulling subscription of the live tail
 * (`openTailStream`) on the command id and the backend's own ids for it (correlation aliases),
 * opened BEFORE the command is submitted so nothing is missed. Each event is handed to `notify`
 * (the session's push) and kept for `send_command_and_wait`. It ends on a terminal event, when
 * the session ends (`close()`), when the consumer falls behind its byte bound, or at shutdown.
 * Only the events the session's caller sees are followed (per-caller catalogues): another backend
 * may produce events under the command's correlation id.
 */
import { followAliases, type AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import type { TailEndReason } from '../live-tail/tail-subscriber.ts';
import { openTailStream } from '../live-tail/tail-stream.ts';
import type { CloudEvent } from '../../log/EventLog.ts';
import type { EventVisibility } from '../../edge/access-rules.ts';

/** Bytes of events queued for one followed command before it is ended as slow (1 MiB). */
const MAX_BUFFERED_BYTES = 1 << 20;
/** Events kept for `send_command_and_wait`'s answer; later ones are still pushed. */
const MAX_KEPT_EVENTS = 1000;

/** One followed command. */
export class CommandFollow {
  /** The command's events so far (at most `MAX_KEPT_EVENTS`). */
  readonly events: CloudEvent[] = [];
  /** Resolves once the follow ended and every event it delivered is in `events` and was notified, with why. */
  readonly ended: Promise<TailEndReason>;
  readonly #close: () => void;

  private constructor(stream: ReturnType<typeof openTailStream>, notify: (event: CloudEvent) => Promise<void>) {
    this.#close = () => stream.close();
    const drained = (async () => {
      for await (const event of stream) {
        if (this.events.length < MAX_KEPT_EVENTS) this.events.push(event);
        await notify(event);
      }
    })().catch(() => stream.close());
    // The stream ends (e.g. on its terminal event) before this loop has taken its last events:
    // `ended` waits for the loop, so `events` then holds everything the stream delivered.
    this.ended = drained.then(() => stream.ended);
  }

  /** Opens the subscription for `commandId`, carrying the events `visible` lets through; open it before submitting the command. */
  static async open(tail: LiveTail, aliases: AliasSource, commandId: string, visible: EventVisibility, notify: (event: CloudEvent) => Promise<void>): Promise<CommandFollow> {
    const { filter, aliasesFor } = await followAliases({ correlationId: commandId }, aliases);
    const stream = openTailStream(tail, { transport: 'mcp', filter, visible, closeOnTerminal: true, maxBufferedBytes: MAX_BUFFERED_BYTES, ...(aliasesFor !== undefined && { aliasesFor }) });
    return new CommandFollow(stream, notify);
  }

  /** Stops following (idempotent). */
  close(): void {
    this.#close();
  }
}
