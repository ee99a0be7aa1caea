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
 * - Credentials in metadata, admitted by the one admission path (`edge/`): scopes from its table
 *   (`read` for the event RPCs, `write` for commands); a `Subscribe` holds a slot of the shared
 *   stream pool (`sse.maxConnections`, `sse.maxConnectionsPerPrincipal`: `RESOURCE_EXHAUSTED`).
 * - Sizes as on HTTP: a message over `server.bodyLimit` is refused by grpc-js before it is decoded
 *   (`RESOURCE_EXHAUSTED`); `SubmitCommand`'s JSON `text_data` deeper than `server.maxJsonDepth` is
 *   `INVALID_ARGUMENT` (`INVALID_JSON`).
 * - The standard health service (`grpc.health.v1`) and server reflection (v1 and v1alpha) are
 *   served beside it; reflection serves the compiled descriptors of `proto/descriptors.pb`
 *   (`descriptor-set.ts`) and lists all three services.
 * - `close()` (shutdown): health turns NOT_SERVING, open streams (Subscribe and health Watch) end
 *   `UNAVAILABLE` ("gateway shutting down"), calls in flight get until the deadline, then the
 *   server is forced down. Every refusal and every abnormal end carries `proto-error-code`.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import type { Logger } from 'pino';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import type { EventsConfig, GatewayConfig } from '../../config/types.ts';
import { ProtoError } from '../../errors.ts';
import type { AccessRules } from '../../edge/access-rules.ts';
import { presentedOfMetadata, type Admission } from '../../edge/admission.ts';
import type { Principal } from '../../edge/credentials.ts';
import type { Operation } from '../../edge/operations.ts';
import type { Slot, SlotEnd } from '../../edge/quota.ts';
import { exceedsJsonDepth } from '../../http/body.ts';
import type { EventFilter, EventLog } from '../../log/EventLog.ts';
import { readHistory } from '../../log/history.ts';
import type { GrpcMetrics } from '../../metrics/grpc.ts';
import { followAliases, type AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { fromProtoEvent, toProtoEvent, type ProtoCloudEvent } from './cloudevent-codec.ts';
import { grpcError, statusName } from './grpc-status.ts';
import { readDescriptorSet, reflectionPackage } from './descriptor-set.ts';
import { HealthService } from './health-service.ts';
import { endStatus, GrpcStreamWriter, PROTO_ENCODING } from './grpc-stream-writer.ts';
import { decoded, isUndecodable, tolerantDecoding } from './tolerant-decoding.ts';
import { annotate, SpanStatusCode, startRpcServerSpan, withSpan, type Span } from '../../telemetry/tracing.ts';

/** The folder of the `.proto` files (also served over HTTP at `/proto/`). */
export const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));

/** The compiled `FileDescriptorSet` of the gRPC surface (`proto/build-descriptors.sh` writes it). */
export const DESCRIPTOR_SET_PATH = `${PROTO_DIR}descriptors.pb`;

/** The fully qualified name of the service (health status key). */
export const EVENT_GATEWAY_SERVICE = 'proto.gateway.v1.EventGateway';

/** What the bridge is built from, at boot. */
export interface GrpcBridgeOptions {
  config: NonNullable<GatewayConfig['grpc']>;
  admission: Admission;
  /** Largest message received, in bytes (`server.bodyLimit`). */
  maxMessageBytes: number;
  /** `server.maxJsonDepth`: the deepest JSON `text_data` of a command. */
  maxJsonDepth: number;
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
  /** Per-caller catalogues: ListEvents and Subscribe carry only the events the caller sees (default: every event). */
  access?: Pick<AccessRules, 'eventsSeenBy'>;
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
  readonly #server: grpc.Server;
  readonly #health = new HealthService(['', EVENT_GATEWAY_SERVICE]);
  readonly #streams = new Set<GrpcStreamWriter>();
  #port = 0;
  #closing: Promise<void> | undefined;

  constructor(options: GrpcBridgeOptions) {
    this.#o = options;
    this.#server = new grpc.Server({ 'grpc.max_receive_message_length': options.maxMessageBytes });
    // The service from the .proto files (protobufjs turns a descriptor's map entries into repeated
    // fields, not maps); reflection from the compiled set, which a test holds equal to these files.
    const definition = protoLoader.loadSync(['gateway.proto'], { includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: false, oneofs: true });
    const service = tolerantDecoding((grpc.loadPackageDefinition(definition) as any).proto.gateway.v1.EventGateway.service as grpc.ServiceDefinition);
    this.#server.addService(service, {
      // A failure after admission (reading the aliases) ends this call, never the process.
      Subscribe: (call: grpc.ServerWritableStream<SubscribeRequest, ProtoCloudEvent>) => void this.#subscribeChecked(call).catch((err: unknown) => {
        const error = grpcError(err);
        this.#o.logger.warn({ err }, 'grpc subscribe failed');
        this.#o.metrics.rpc('Subscribe', statusName(error.code!));
        if (!call.cancelled && !call.destroyed) call.emit('error', error);
      }),
      ListEvents: this.#unary('ListEvents', 'grpc.ListEvents', (request: ListEventsRequest, principal) => this.#listEvents(request, principal)),
      SubmitCommand: this.#unary('SubmitCommand', 'grpc.SubmitCommand', (request: ProtoCloudEvent, principal) => this.#submit(request, principal)),
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

  /** The principal of a call's metadata, admitted for `operation`; throws UNAUTHENTICATED / FORBIDDEN. */
  #principal(metadata: grpc.Metadata, operation: Operation): Promise<Principal> {
    return this.#o.admission.admit(operation, presentedOfMetadata(metadata.getMap()));
  }

  /** A unary handler: authenticated, errors mapped to gRPC statuses, counted. */
  #unary<Req, Res>(method: string, operation: Operation, handle: (request: Req, principal: Principal) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      // The server span: child of the caller's `traceparent` metadata; the accept of a command is its child.
      const span = startRpcServerSpan('grpc', EVENT_GATEWAY_SERVICE, method, call.metadata.getMap());
      withSpan(span, () => this.#principal(call.metadata, operation).then((principal) => handle(decoded(call.request), principal)))
        .then(
          (response) => {
            this.#o.metrics.rpc(method, 'OK');
            endRpcSpan(span, grpc.status.OK);
            callback(null, response);
          },
          (err: unknown) => {
            const error = grpcError(err);
            if (error.code === grpc.status.INTERNAL) this.#o.logger.error({ err, method }, 'grpc call failed');
            this.#o.metrics.rpc(method, statusName(error.code));
            endRpcSpan(span, error.code ?? grpc.status.UNKNOWN);
            callback(error as grpc.ServiceError);
          },
        )
        // Whatever fails while answering ends this call, never the process.
        .catch((err: unknown) => {
          this.#o.logger.error({ err, method }, 'grpc answer failed');
          callback({ code: grpc.status.INTERNAL, details: 'internal error' } as grpc.ServiceError);
        });
    };
  }

  async #listEvents(request: ListEventsRequest, principal: Principal): Promise<{ events: ProtoCloudEvent[]; next_cursor: string }> {
    const filter = eventFilter(request);
    if (request.from) filter.fromMs = timeOf(request.from, 'from');
    if (request.to) filter.toMs = timeOf(request.to, 'to');
    if (request.limit !== undefined && request.limit < 0) throw new ProtoError('INVALID_PARAMETER', 'limit must not be negative', { parameter: 'limit' });
    const correlationAliases = filter.correlationId === undefined ? undefined : await this.#o.aliases.aliasesOf(filter.correlationId);
    const page = await readHistory(this.#o.log, this.#o.events.pageSize, { filter, limit: request.limit || undefined, after: request.after || undefined, correlationAliases, visible: this.#o.access?.eventsSeenBy(principal) });
    return { events: page.events.map(toProtoEvent), next_cursor: page.nextCursor ?? '' };
  }

  async #submit(request: ProtoCloudEvent, principal: Principal): Promise<{ id: string }> {
    let envelope: Record<string, unknown>;
    const { maxJsonDepth } = this.#o;
    if (typeof request.text_data === 'string' && exceedsJsonDepth(request.text_data, maxJsonDepth)) {
      throw new ProtoError('INVALID_JSON', `JSON nesting depth exceeds the limit of ${maxJsonDepth}`, { maxDepth: maxJsonDepth });
    }
    try {
      envelope = fromProtoEvent(request);
    } catch {
      throw new ProtoError('INVALID_JSON', 'text_data is not JSON, though datacontenttype says it is');
    }
    const answer = await this.#o.ingestion.submit({ principal: principal.id, caller: principal, readBody: async () => envelope });
    return { id: String((answer.body as { id?: unknown }).id ?? envelope.id) };
  }

  /** A request that did not decode is INVALID_ARGUMENT (after admission, as any request); else `#subscribe`. */
  async #subscribeChecked(call: grpc.ServerWritableStream<SubscribeRequest, ProtoCloudEvent>): Promise<void> {
    if (isUndecodable(call.request)) {
      await this.#principal(call.metadata, 'grpc.Subscribe');
      decoded(call.request);
    }
    return this.#subscribe(call);
  }

  async #subscribe(call: grpc.ServerWritableStream<SubscribeRequest, ProtoCloudEvent>): Promise<void> {
    const { metrics } = this.#o;
    // The server span of the whole stream (each event it carries is a delivery span of its own).
    const span = startRpcServerSpan('grpc', EVENT_GATEWAY_SERVICE, 'Subscribe', call.metadata.getMap());
    let slot: Slot;
    let principal: Principal;
    let writer: GrpcStreamWriter | undefined;
    let revoked: SlotEnd | undefined;
    try {
      principal = await this.#principal(call.metadata, 'grpc.Subscribe');
      if (this.#closing || this.#o.tail.closed) throw new ProtoError('NOT_READY', 'the gateway is shutting down');
      // A reload that revokes the caller's credentials, or its token's expiry, ends the stream (at
      // once, or as soon as it is attached).
      slot = this.#o.admission.streams.take(principal, (reason) => {
        revoked = reason;
        writer?.close(reason);
      });
    } catch (err) {
      const error = grpcError(err);
      metrics.rpc('Subscribe', statusName(error.code));
      endRpcSpan(span, error.code);
      call.emit('error', error);
      return;
    }
    const { filter, aliasesFor } = await followAliases(eventFilter(call.request), this.#o.aliases).catch((err: unknown) => {
      slot.release();
      endRpcSpan(span, grpcError(err).code);
      throw err;
    });
    // Cancelled (or shut down) while the aliases were read: nothing to attach.
    if (call.cancelled || call.destroyed) {
      slot.release();
      endRpcSpan(span, grpc.status.CANCELLED);
      return metrics.rpc('Subscribe', 'CANCELLED');
    }
    if (this.#closing) {
      slot.release();
      metrics.rpc('Subscribe', 'UNAVAILABLE');
      endRpcSpan(span, grpc.status.UNAVAILABLE);
      return void call.emit('error', endStatus('shutdown'));
    }
    writer = new GrpcStreamWriter(call, this.#o.maxBufferedBytes, (reason) => {
      slot.release();
      this.#streams.delete(writer!);
      attachment.detach();
      metrics.streams(-1);
      const { code } = endStatus(reason);
      metrics.rpc('Subscribe', statusName(code));
      endRpcSpan(span, code);
    });
    this.#streams.add(writer);
    metrics.streams(1);
    const attachment = this.#o.tail.attach({
      transport: 'grpc',
      connection: writer,
      encoding: PROTO_ENCODING,
      filter,
      visible: this.#o.access?.eventsSeenBy(principal),
      closeOnTerminal: this.#o.closeOnTerminal,
      maxHeldBytes: this.#o.maxBufferedBytes,
      metrics,
      afterId: call.request.last_event_id || undefined,
      aliasesFor,
    });
    if (revoked) writer.close(revoked);
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

/** Ends a call's server span with its status (`rpc.grpc.status_code`; server errors per the RPC conventions). */
function endRpcSpan(span: Span, code: number): void {
  annotate(span, () => ({ 'rpc.grpc.status_code': code }));
  const serverError = [grpc.status.UNKNOWN, grpc.status.DEADLINE_EXCEEDED, grpc.status.UNIMPLEMENTED, grpc.status.INTERNAL, grpc.status.UNAVAILABLE, grpc.status.DATA_LOSS].includes(code);
  if (serverError && span.isRecording()) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
