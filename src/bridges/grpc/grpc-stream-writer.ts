/** One gRPC `Subscribe` call as a live-tail writer, and the status a stream ends with. */
import * as grpc from '@grpc/grpc-js';
import { ProtoError } from '../../errors.ts';
import { BacklogBound } from '../live-tail/backlog-bound.ts';
import type { TailEncoding } from '../live-tail/tail-event.ts';
import type { TailEndReason, TailWriter } from '../live-tail/tail-subscriber.ts';
import { toProtoEvent, type ProtoCloudEvent } from './cloudevent-codec.ts';
import { grpcError } from './grpc-status.ts';

/** Events as protobuf messages, sized by their JSON (the unit of the per-stream byte bound). */
export const PROTO_ENCODING: TailEncoding<ProtoCloudEvent> = {
  encode: toProtoEvent,
  size: (message) => (message.text_data?.length ?? message.binary_data?.length ?? 0) + message.id.length + message.source.length + 256,
};

/**
 * The status a stream ends with, by why it ended: a catalogue error (so the trailers carry
 * `proto-error-code`, as every refusal's do), or OK.
 */
export function endStatus(reason: TailEndReason): Partial<grpc.ServiceError> & { code: grpc.status } {
  switch (reason) {
    case 'slow':
      return grpcError(new ProtoError('SLOW_CONSUMER', 'the stream fell too far behind; resume with last_event_id'));
    case 'shutdown':
      return grpcError(new ProtoError('NOT_READY', 'gateway shutting down; resume with last_event_id'));
    case 'error':
      return grpcError(new ProtoError('INTERNAL', 'the stream failed; resume with last_event_id'));
    case 'revoked':
      return grpcError(new ProtoError('UNAUTHENTICATED', 'the credentials of this stream were revoked by a configuration reload'));
    case 'expired':
      return grpcError(new ProtoError('UNAUTHENTICATED', 'the token of this stream has expired; resume with a new one and last_event_id'));
    case 'client':
      return { code: grpc.status.CANCELLED, details: 'cancelled' };
    default:
      return { code: grpc.status.OK, details: 'OK' };
  }
}

/**
 * One Subscribe call as a tail writer: bounded unread bytes, `drain` for paced writes, and the end
 * of the call (cancel, deadline, or a status we send) detaching it once.
 */
export class GrpcStreamWriter implements TailWriter<ProtoCloudEvent> {
  readonly #call: grpc.ServerWritableStream<unknown, ProtoCloudEvent>;
  readonly #onEnd: (reason: TailEndReason) => void;
  readonly #bound: BacklogBound;
  /** Bytes written but not yet taken by the transport. */
  #pending = 0;
  #closed = false;

  constructor(call: grpc.ServerWritableStream<unknown, ProtoCloudEvent>, maxBytes: number, onEnd: (reason: TailEndReason) => void) {
    this.#call = call;
    this.#onEnd = onEnd;
    this.#bound = new BacklogBound(maxBytes);
    // Cancel by the client and an expired deadline both end here; so does a transport error.
    call.once('cancelled', () => this.close('client'));
    call.once('close', () => this.close('client'));
    call.once('error', () => this.close('client'));
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(message: ProtoCloudEvent): boolean {
    if (this.#closed) return false;
    const size = PROTO_ENCODING.size(message);
    if (!this.#bound.admits(this.#pending, size)) {
      this.close('slow');
      return false;
    }
    this.#write(message, size);
    return true;
  }

  /**
   * Writes and waits for 'drain' only when the write returned false: Node emits 'drain' only after
   * a write said so, and waiting otherwise stalled a replay for good after one event larger than
   * the bound.
   */
  async sendPaced(message: ProtoCloudEvent): Promise<boolean> {
    if (this.#closed) return false;
    if (!this.#write(message, PROTO_ENCODING.size(message))) await this.#drained();
    return !this.#closed;
  }

  close(reason: TailEndReason): void {
    if (this.#closed) return;
    this.#closed = true;
    const call = this.#call;
    if (reason !== 'client' && !call.cancelled && !call.destroyed) {
      const status = endStatus(reason);
      if (status.code === grpc.status.OK) call.end();
      else call.emit('error', status);
    }
    this.#onEnd(reason);
  }

  #write(message: ProtoCloudEvent, size: number): boolean {
    this.#pending += size;
    this.#bound.wrote(size);
    return this.#call.write(message, () => {
      this.#pending -= size;
      if (this.#pending === 0) this.#bound.emptied();
    });
  }

  #drained(): Promise<void> {
    const call = this.#call;
    return new Promise((resolve) => {
      const done = (): void => {
        call.off('drain', done);
        call.off('close', done);
        call.off('cancelled', done);
        resolve();
      };
      call.on('drain', done);
      call.on('close', done);
      call.on('cancelled', done);
    });
  }
}
