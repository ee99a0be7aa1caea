/**
 * The standard health service (`grpc.health.v1.Health`, from `grpc-health-check`) with an end:
 * `close()` reports NOT_SERVING to every watcher, then ends each open `Watch` stream with
 * `UNAVAILABLE` (trailer `proto-error-code: NOT_READY`), and a `Watch` opened afterwards ends at
 * once. Without it an open `Watch` holds the server's graceful shutdown for the whole
 * `server.shutdownTimeout` (the library keeps those streams open for ever).
 */
import type * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { ProtoError } from '../../errors.ts';
import { grpcError } from './grpc-status.ts';

/** A service's health. */
export type ServingStatus = 'SERVING' | 'NOT_SERVING';

type WatchCall = grpc.ServerWritableStream<unknown, unknown>;

/** The health service of the gateway's gRPC server. A component: `close()` is idempotent. */
export class HealthService {
  readonly #health: HealthImplementation;
  readonly #services: string[];
  readonly #watches = new Set<WatchCall>();
  #closed = false;

  /** Reports `services` (`''` is the server as a whole), NOT_SERVING until `setStatus`. */
  constructor(services: string[]) {
    this.#services = services;
    this.#health = new HealthImplementation(Object.fromEntries(services.map((name) => [name, 'NOT_SERVING'])));
  }

  /** Adds the service to `server`, its `Watch` handler tracked so that `close()` can end it. */
  addToServer(server: grpc.Server): void {
    const tracking = {
      addService: (service: grpc.ServiceDefinition, handlers: grpc.UntypedServiceImplementation) => {
        const watch = handlers.watch as grpc.handleServerStreamingCall<unknown, unknown>;
        server.addService(service, { ...handlers, watch: (call: WatchCall) => this.#watch(call, watch) });
      },
    };
    this.#health.addToServer(tracking as unknown as grpc.Server);
  }

  /** Sets every service's status. */
  setStatus(status: ServingStatus): void {
    for (const name of this.#services) this.#health.setStatus(name, status);
  }

  /** NOT_SERVING to every watcher, then every Watch stream ends UNAVAILABLE. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.setStatus('NOT_SERVING');
    this.#closed = true;
    for (const call of [...this.#watches]) end(call);
    this.#watches.clear();
  }

  #watch(call: WatchCall, watch: grpc.handleServerStreamingCall<unknown, unknown>): void {
    watch(call);
    if (this.#closed) return end(call);
    this.#watches.add(call);
    const forget = (): void => void this.#watches.delete(call);
    call.once('cancelled', forget);
    call.once('close', forget);
  }
}

function end(call: WatchCall): void {
  if (call.cancelled || call.destroyed) return;
  call.emit('error', grpcError(new ProtoError('NOT_READY', 'gateway shutting down')));
}
