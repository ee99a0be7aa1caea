/**
 * The gRPC bridge (`grpc` section; absent = off): `proto.gateway.v1.EventGateway` on
 * `grpc.host:grpc.port` with @grpc/grpc-js, in the CloudEvents protobuf format.
 *
 * - `Subscribe` is one more transport of the live tail: filters, replay after `last_event_id`, live
 *   continuation with no gap or duplicate, close on the command's terminal event. Backpressure: a
 *   write the stream cannot take waits for `drain`; what waits unread is bounded by
 *   `sse.maxBufferedBytes`, beyond which the stream ends `RESOURCE_EXHAUSTED` (resume with
 *   `last_event_id`). Cancel and deadline detach the subscription at once.
 * - `ListEvents` is `GET /events`; `SubmitCommand` goes through the one command pipeline.
 * - Credentials in metadata, scopes as on HTTP (`read` for the event RPCs, `write` for commands).
 * - The standard health service (`grpc.health.v1`) and server reflection (v1 and v1alpha) are
 *   served beside it; reflection serves the compiled descriptors of `proto/descriptors.pb`
 *   (`descriptor-set.ts`) and lists all three services.
 * - `close()` (shutdown): health turns NOT_SERVING, open streams (Subscribe and health Watch) end
 *   `UNAVAILABLE` ("gateway shutting down"), calls in flight get until the deadline, then the
 *   server is forced down. Every refusal and every abnormal end carries `proto-error-code`.
 */
import type { IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import type { Logger } from 'pino';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import type { EventsConfig, GatewayConfig } from '../../config/types.ts';
import { ProtoError } from '../../errors.ts';
import { requireScope, type Authenticator } from '../../http/auth.ts';
import type { Principal } from '../../http/route.ts';
import type { EventFilter, EventLog } from '../../log/EventLog.ts';
import { readHistory } from '../../log/history.ts';
import type { GrpcMetrics } from '../../metrics/grpc.ts';
import { followAliases, type AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import type { TailEncoding } from '../live-tail/tail-event.ts';
import type { TailEndReason, TailWriter } from '../live-tail/tail-subscriber.ts';
import { fromProtoEvent, toProtoEvent, type ProtoCloudEvent } from './cloudevent-codec.ts';
import { grpcError, statusName } from './grpc-status.ts';
import { readDescriptorSet, reflectionPackage } from './descriptor-set.ts';
import { HealthService } from './health-service.ts';

/** The folder of the `.proto` files (also served over HTTP at `/proto/`). */
export const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));

/** The compiled `FileDescriptorSet` of the gRPC surface (`proto/build-descriptors.sh` writes it). */
export const DESCRIPTOR_SET_PATH = `${PROTO_DIR}descriptors.pb`;

/** The fully qualified name of the service (health status key). */
export const EVENT_GATEWAY_SERVICE = 'proto.gateway.v1.EventGateway';

/** Events as protobuf messages, sized by their JSON (the unit of the per-stream byte bound). */
const PROTO_ENCODING: TailEncoding<ProtoCloudEvent> = {
  encode: toProtoEvent,
  size: (message) => (message.text_data?.length ?? message.binary_data?.length ?? 0) + message.id.length + message.source.length + 256,
};

/** What the bridge is built from, at boot. */
export interface GrpcBridgeOptions {
  config: NonNullable<GatewayConfig['grpc']>;
  authenticate: Authenticator;
  tail: LiveTail;
  log: EventLog;
  events: EventsConfig;
  aliases: AliasSource;
  ingestion: CommandIngestion;
  /** Bytes a Subscribe stream may leave unread (`sse.maxBufferedBytes`). */
  maxBufferedBytes: number;
  /** End a correlation-filtered stream after its terminal event (`sse.closeOnTerminal`). */
  closeOnTerminal: boolean;
  metrics: GrpcMetrics;
  logger: Logger;
}

interface SubscribeRequest {
  type?: string;
  source?: string;
  correlation_id?: string;
  last_event_id?: string;
}

interface ListEventsRequest {
  type?: string;
  source?: string;
  correlation_id?: string;
  from?: string;
  to?: string;
  limit?: number;
  after?: string;
}

/** The gRPC server of the gateway. A component: `start()` binds, `close()` drains. */
export class GrpcBridge {
  readonly #o: GrpcBridgeOptions;
  readonly #server = new grpc.Server();
  readonly #health = new HealthService(['', EVENT_GATEWAY_SERVICE]);
  readonly #streams = new Set<GrpcStreamWriter>();
  #port = 0;
  #closing: Promise<void> | undefined;

  constructor(options: GrpcBridgeOptions) {
    this.#o = options;
    // The service from the .proto files (protobufjs turns a descriptor's map entries into repeated
    // fields, not maps); reflection from the compiled set, which a test holds equal to these files.
    const definition = protoLoader.loadSync(['gateway.proto'], { includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: false, oneofs: true });
    const service = (grpc.loadPackageDefinition(definition) as any).proto.gateway.v1.EventGateway.service as grpc.ServiceDefinition;
    this.#server.addService(service, {
      Subscribe: (call: grpc.ServerWritableStream<SubscribeRequest, ProtoCloudEvent>) => void this.#subscribe(call),
      ListEvents: this.#unary('ListEvents', 'read', (request: ListEventsRequest) => this.#listEvents(request)),
      SubmitCommand: this.#unary('SubmitCommand', 'write', (request: ProtoCloudEvent, principal) => this.#submit(request, principal)),
    });
    this.#health.addToServer(this.#server);
    new ReflectionService(reflectionPackage(readDescriptorSet(DESCRIPTOR_SET_PATH))).addToServer(this.#server);
  }

  /** The port it listens on (the configured one, or the one chosen for port 0). */
  get port(): number {
    return this.#port;
  }

  /** Binds `grpc.host:grpc.port` (plaintext; put TLS in front, as for HTTP) and reports SERVING. */
  async start(): Promise<void> {
    const { host, port } = this.#o.config;
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    this.#port = await new Promise<number>((resolve, reject) => {
      this.#server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
    });
    this.#health.setStatus('SERVING');
    this.#o.logger.info({ host, port: this.#port }, 'grpc listening');
  }

  /** Ends the streams (UNAVAILABLE), lets unary calls finish until `deadlineMs`, then forces the server down. Idempotent. */
  close(deadlineMs: number = Date.now()): Promise<void> {
    this.#closing ??= this.#shutdown(deadlineMs);
    return this.#closing;
  }

  async #shutdown(deadlineMs: number): Promise<void> {
    this.#health.close();
    for (const stream of [...this.#streams]) stream.close('shutdown');
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.#server.forceShutdown();
        resolve();
      }, Math.max(0, deadlineMs - Date.now()));
      this.#server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  /** The principal of a call's metadata, holding `scope`; throws UNAUTHENTICATED / FORBIDDEN. */
  #principal(metadata: grpc.Metadata, scope: 'read' | 'write'): Principal {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(metadata.getMap())) if (typeof value === 'string') headers[name] = value;
    const principal = this.#o.authenticate({ headers } as unknown as IncomingMessage, new URLSearchParams());
    requireScope(principal, scope);
    return principal;
  }

  /** A unary handler: authenticated, errors mapped to gRPC statuses, counted. */
  #unary<Req, Res>(method: string, scope: 'read' | 'write', handle: (request: Req, principal: Principal) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      Promise.resolve()
        .then(() => handle(call.request, this.#principal(call.metadata, scope)))
        .then(
          (response) => {
            this.#o.metrics.rpc(method, 'OK');
            callback(null, response);
          },
          (err: unknown) => {
            const error = grpcError(err);
            if (error.code === grpc.status.INTERNAL) this.#o.logger.error({ err, method }, 'grpc call failed');
            this.#o.metrics.rpc(method, statusName(error.code));
            callback(error as grpc.ServiceError);
          },
        );
    };
  }

  async #listEvents(request: ListEventsRequest): Promise<{ events: ProtoCloudEvent[]; next_cursor: string }> {
    const filter = eventFilter(request);
    if (request.from) filter.fromMs = timeOf(request.from, 'from');
    if (request.to) filter.toMs = timeOf(request.to, 'to');
    if (request.limit !== undefined && request.limit < 0) throw new ProtoError('INVALID_PARAMETER', 'limit must not be negative', { parameter: 'limit' });
    const correlationAliases = filter.correlationId === undefined ? undefined : await this.#o.aliases.aliasesOf(filter.correlationId);
    const page = await readHistory(this.#o.log, this.#o.events.pageSize, { filter, limit: request.limit || undefined, after: request.after || undefined, correlationAliases });
    return { events: page.events.map(toProtoEvent), next_cursor: page.nextCursor ?? '' };
  }

  async #submit(request: ProtoCloudEvent, principal: Principal): Promise<{ id: string }> {
    let envelope: Record<string, unknown>;
    try {
      envelope = fromProtoEvent(request);
    } catch {
      throw new ProtoError('INVALID_JSON', 'text_data is not JSON, though datacontenttype says it is');
    }
    const answer = await this.#o.ingestion.submit({ principal: principal.id, readBody: async () => envelope });
    return { id: String((answer.body as { id?: unknown }).id ?? envelope.id) };
  }

  async #subscribe(call: grpc.ServerWritableStream<SubscribeRequest, ProtoCloudEvent>): Promise<void> {
    const { metrics } = this.#o;
    try {
      this.#principal(call.metadata, 'read');
      if (this.#closing || this.#o.tail.closed) throw new ProtoError('NOT_READY', 'the gateway is shutting down');
    } catch (err) {
      const error = grpcError(err);
      metrics.rpc('Subscribe', statusName(error.code));
      call.emit('error', error);
      return;
    }
    const { filter, aliasesFor } = await followAliases(eventFilter(call.request), this.#o.aliases);
    // Cancelled (or shut down) while the aliases were read: nothing to attach.
    if (call.cancelled || call.destroyed) return metrics.rpc('Subscribe', 'CANCELLED');
    if (this.#closing) {
      metrics.rpc('Subscribe', 'UNAVAILABLE');
      return void call.emit('error', endStatus('shutdown'));
    }
    const writer = new GrpcStreamWriter(call, this.#o.maxBufferedBytes, (reason) => {
      this.#streams.delete(writer);
      attachment.detach();
      metrics.streams(-1);
      metrics.rpc('Subscribe', statusName(endStatus(reason).code));
    });
    this.#streams.add(writer);
    metrics.streams(1);
    const attachment = this.#o.tail.attach({
      connection: writer,
      encoding: PROTO_ENCODING,
      filter,
      closeOnTerminal: this.#o.closeOnTerminal,
      maxHeldBytes: this.#o.maxBufferedBytes,
      metrics,
      afterId: call.request.last_event_id || undefined,
      aliasesFor,
    });
  }
}

/** The filters of a request; empty strings are no filter. */
function eventFilter(request: { type?: string; source?: string; correlation_id?: string }): EventFilter {
  const filter: EventFilter = {};
  if (request.type) filter.type = request.type;
  if (request.source) filter.source = request.source;
  if (request.correlation_id) filter.correlationId = request.correlation_id;
  return filter;
}

function timeOf(value: string, name: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new ProtoError('INVALID_PARAMETER', `${name} must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z`, { parameter: name, value });
  return ms;
}

/**
 * The status a stream ends with, by why it ended: a catalogue error (so the trailers carry
 * `proto-error-code`, as every refusal's do), or OK.
 */
function endStatus(reason: TailEndReason): Partial<grpc.ServiceError> & { code: grpc.status } {
  switch (reason) {
    case 'slow':
      return grpcError(new ProtoError('SLOW_CONSUMER', 'the stream fell too far behind; resume with last_event_id'));
    case 'shutdown':
      return grpcError(new ProtoError('NOT_READY', 'gateway shutting down; resume with last_event_id'));
    case 'error':
      return grpcError(new ProtoError('INTERNAL', 'the stream failed; resume with last_event_id'));
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
class GrpcStreamWriter implements TailWriter<ProtoCloudEvent> {
  readonly #call: grpc.ServerWritableStream<unknown, ProtoCloudEvent>;
  readonly #maxBytes: number;
  readonly #onEnd: (reason: TailEndReason) => void;
  /** Bytes written but not yet taken by the transport. */
  #pending = 0;
  #closed = false;

  constructor(call: grpc.ServerWritableStream<unknown, ProtoCloudEvent>, maxBytes: number, onEnd: (reason: TailEndReason) => void) {
    this.#call = call;
    this.#maxBytes = maxBytes;
    this.#onEnd = onEnd;
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
    if (this.#pending > 0 && this.#pending + size > this.#maxBytes) {
      this.close('slow');
      return false;
    }
    this.#write(message, size);
    return true;
  }

  async sendPaced(message: ProtoCloudEvent): Promise<boolean> {
    if (this.#closed) return false;
    if (!this.#write(message, PROTO_ENCODING.size(message)) || this.#pending > this.#maxBytes) await this.#drained();
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
    return this.#call.write(message, () => {
      this.#pending -= size;
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
