/**
 * A grpc-js client of the gateway's `proto.gateway.v1.EventGateway`, loaded from the repository's
 * `.proto` files, closed by `closeAll()`.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_DIR } from '../../src/bridges/grpc/grpc-bridge.ts';
import { track } from './gateway.ts';

export type EventGatewayClient = grpc.Client & Record<string, any>;

/** A client of the gateway's gRPC port (`gateway.grpc.port`). */
export function grpcClient(port: number): EventGatewayClient {
  const definition = protoLoader.loadSync(['gateway.proto'], { includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const Service = (grpc.loadPackageDefinition(definition) as any).proto.gateway.v1.EventGateway;
  const client = new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 64 * 1024 * 1024 }) as EventGatewayClient;
  track({ close: async () => client.close() });
  return client;
}

/** Call metadata carrying an API key. */
export function keyMetadata(key?: string): grpc.Metadata {
  const md = new grpc.Metadata();
  if (key) md.set('x-api-key', key);
  return md;
}

/** A unary call as a promise. */
export function unary<T = any>(client: EventGatewayClient, method: string, request: unknown, md = keyMetadata()): Promise<T> {
  return new Promise((resolve, reject) => client[method](request, md, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res))));
}

/**
 * Opens a Subscribe stream; resolves once the server has either refused it (with its status) or
 * accepted it (after `acceptedWithinMs` without an error).
 */
export function subscribe(client: EventGatewayClient, request: Record<string, unknown>, md: grpc.Metadata) {
  const call = client.Subscribe(request, md) as grpc.ClientReadableStream<any>;
  const events: any[] = [];
  let error: grpc.ServiceError | undefined;
  call.on('data', (event: any) => events.push(event));
  call.on('error', (err: grpc.ServiceError) => (error = err));
  track({ close: async () => call.cancel() });
  return { call, events, error: () => error };
}
