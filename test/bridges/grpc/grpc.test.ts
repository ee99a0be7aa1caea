import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app.ts';
import { exampleBackends, ordersBackend, placeOrder } from '../../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../../support/gateway.ts';
import { append, cloudEvent, metricValue } from '../sse/support.ts';

afterEach(closeAll);

const require = createRequire(import.meta.url);

const GRPC = 'grpc: { host: 127.0.0.1, port: 0 }';
const AUTH = `auth:
  type: apiKey
  keys:
    - { id: writer, key: write-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }`;

type Client = grpc.Client & Record<string, any>;

/** A grpc-js client built only from the manifest and the .proto files the gateway serves. */
async function clientFromManifest(gw: Gateway): Promise<{ client: Client; endpoint: string }> {
  const manifest = (await getJson(`${gw.url}.well-known/proto`)).body;
  const block = manifest.PROTO.services['io.proto.agents'].grpc as { endpoint: string; proto: string };
  const dir = tempDir();
  for (const name of ['gateway.proto', 'cloudevents.proto']) {
    const res = await fetch(new URL(name, block.proto));
    expect(res.status).toBe(200);
    writeFileSync(join(dir, name), await res.text());
  }
  const definition = protoLoader.loadSync(join(dir, 'gateway.proto'), { includeDirs: [dir], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const Service = (grpc.loadPackageDefinition(definition) as any).proto.gateway.v1.EventGateway;
  const client = new Service(block.endpoint, grpc.credentials.createInsecure()) as Client;
  track(client);
  return { client, endpoint: block.endpoint };
}

const clients: grpc.Client[] = [];
function track(client: grpc.Client): void {
  clients.push(client);
}
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

function metadata(key?: string): grpc.Metadata {
  const md = new grpc.Metadata();
  if (key) md.set('x-api-key', key);
  return md;
}

function unary<T = any>(client: Client, method: string, request: unknown, md = metadata()): Promise<T> {
  return new Promise((resolve, reject) => client[method](request, md, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res))));
}

/** Reads `count` messages of a Subscribe call. */
function take(call: grpc.ClientReadableStream<any>, count: number): Promise<any[]> {
  return new Promise((resolve, reject) => {
    const got: any[] = [];
    call.on('data', (message) => {
      got.push(message);
      if (got.length === count) resolve(got);
    });
    call.on('error', (err) => (got.length >= count ? undefined : reject(err)));
    call.on('end', () => (got.length >= count ? undefined : reject(new Error(`stream ended after ${got.length}`))));
  });
}

describe('gRPC bridge', () => {
  it('is advertised in the manifest with its served .proto, and a client built from them follows the log with filters', async () => {
    const gw = await startTestGateway(gatewayYaml(GRPC));
    const { client, endpoint } = await clientFromManifest(gw);
    expect(endpoint).toBe(`127.0.0.1:${gw.grpc!.port}`);
    const call = client.Subscribe({ type: 'OrderShippedV1' });
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 1);
    const [shipped] = await append(gw, [cloudEvent('OrderPlacedV1'), cloudEvent('OrderShippedV1', { correlationid: 'c-9', data: { n: 1 } })].reverse());
    const [message] = await take(call, 1);
    expect(message).toMatchObject({ id: shipped.id, source: shipped.source, spec_version: '1.0', type: 'OrderShippedV1', data: 'text_data' });
    expect(JSON.parse(message.text_data)).toEqual(shipped.data);
    expect(message.attributes.correlationid.ce_string).toBe('c-9');
    expect(message.attributes.datacontenttype.ce_string).toBe('application/json');
    expect(new Date(Number(message.attributes.time.ce_timestamp.seconds) * 1000).toISOString().slice(0, 19)).toBe(shipped.time.slice(0, 19));
    call.cancel();
  });

  it('resumes after last_event_id with no gap and no duplicate, then continues live', async () => {
    const gw = await startTestGateway(gatewayYaml(GRPC));
    const { client } = await clientFromManifest(gw);
    const [a, b, c] = await append(gw, [cloudEvent('OrderPlacedV1'), cloudEvent('OrderPlacedV1'), cloudEvent('OrderPlacedV1')]);
    const call = client.Subscribe({ last_event_id: a.id });
    const reading = take(call, 3);
    const [d] = await append(gw, [cloudEvent('OrderPlacedV1')]);
    expect((await reading).map((m) => m.id)).toEqual([b.id, c.id, d.id]);
    call.cancel();
  });

  it('pages through history with ListEvents and next_cursor, filters included', async () => {
    const gw = await startTestGateway(gatewayYaml(GRPC));
    const { client } = await clientFromManifest(gw);
    const events = await append(gw, Array.from({ length: 5 }, () => cloudEvent('OrderPlacedV1')));
    const first = await unary<any>(client, 'ListEvents', { type: 'OrderPlacedV1', limit: 2 });
    expect(first.events.map((e: { id: string }) => e.id)).toEqual([events[0].id, events[1].id]);
    const second = await unary<any>(client, 'ListEvents', { type: 'OrderPlacedV1', limit: 2, after: first.next_cursor });
    expect(second.events.map((e: { id: string }) => e.id)).toEqual([events[2].id, events[3].id]);
    const bad = await unary(client, 'ListEvents', { type: 'OtherV1', after: first.next_cursor }).catch((err) => err);
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.metadata.get('proto-error-code')).toEqual(['INVALID_CURSOR']);
  });

  it('accepts commands through the command pipeline, and refuses invalid (INVALID_ARGUMENT, naming the violations) and unknown ones (FAILED_PRECONDITION)', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${GRPC}\ncommands: { dispatch: { timeout: 1s, retry: { schedule: [50ms] } } }\nbackends:\n${ordersBackend(orders.url)}`));
    const { client } = await clientFromManifest(gw);
    const command = placeOrder({ sku: 'widget', qty: 2 }) as Record<string, any>;
    const message = {
      id: command.id, source: command.source, spec_version: '1.0', type: command.type,
      attributes: { datacontenttype: { ce_string: 'application/json' }, dataschema: { ce_uri_ref: command.dataschema }, time: { ce_timestamp: { seconds: String(Math.floor(Date.now() / 1000)), nanos: 0 } } },
      text_data: JSON.stringify(command.data),
    };
    expect(await unary(client, 'SubmitCommand', message)).toEqual({ id: command.id });
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${command.id}`)).body.events.length === 1);
    const ordersBefore = orders.orders.size;

    const invalid = await unary(client, 'SubmitCommand', { ...message, id: 'cmd-invalid', text_data: JSON.stringify({ sku: 'x', qty: 0 }) }).catch((err) => err);
    expect(invalid.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(invalid.details).toMatch(/^data is not a valid PlaceOrder: \/qty /);
    expect(JSON.parse(invalid.metadata.get('proto-error-details')[0]).errors).toEqual([expect.objectContaining({ path: '/qty' })]);

    const unknown = await unary(client, 'SubmitCommand', { ...message, id: 'cmd-unknown', type: 'LaunchRocket' }).catch((err) => err);
    expect(unknown.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(orders.orders.size).toBe(ordersBefore);
  });

  it('authenticates with metadata: none is UNAUTHENTICATED, a read key cannot submit (PERMISSION_DENIED), x-api-key and Bearer both work', async () => {
    const gw = await startTestGateway(gatewayYaml(`${GRPC}\n${AUTH}`));
    const { client } = await clientFromManifest(gw);
    expect((await unary(client, 'ListEvents', {}).catch((err) => err)).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await unary(client, 'ListEvents', {}, metadata('wrong')).catch((err) => err)).code).toBe(grpc.status.UNAUTHENTICATED);
    expect(await unary(client, 'ListEvents', {}, metadata('read-key'))).toMatchObject({ events: [] });
    const bearer = new grpc.Metadata();
    bearer.set('authorization', 'Bearer read-key');
    expect(await unary(client, 'ListEvents', {}, bearer)).toMatchObject({ events: [] });
    const denied = await unary(client, 'SubmitCommand', { id: 'x', source: 'urn:x', spec_version: '1.0', type: 'PlaceOrder' }, metadata('read-key')).catch((err) => err);
    expect(denied.code).toBe(grpc.status.PERMISSION_DENIED);
    const stream = client.Subscribe({}, metadata());
    const error = await new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    expect(error.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it('serves the standard health service, and cleans up a cancelled stream', async () => {
    const gw = await startTestGateway(gatewayYaml(GRPC));
    const health = (grpc.loadPackageDefinition(protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String })) as any).grpc.health.v1.Health;
    const checker = new health(`127.0.0.1:${gw.grpc!.port}`, grpc.credentials.createInsecure());
    track(checker);
    const status = await new Promise<any>((resolve, reject) => checker.Check({ service: 'proto.gateway.v1.EventGateway' }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))));
    expect(status.status).toBe('SERVING');

    const { client } = await clientFromManifest(gw);
    const call = client.Subscribe({});
    call.on('error', () => {});
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 1);
    call.cancel();
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 0);
  });

  it('serves server reflection: the service is listed for tools such as grpcurl', async () => {
    const gw = await startTestGateway(gatewayYaml(GRPC));
    const reflectionProto = join(require.resolve('@grpc/reflection/package.json'), '..', 'build/proto/grpc/reflection/v1/reflection.proto');
    const Reflection = (grpc.loadPackageDefinition(protoLoader.loadSync(reflectionProto, { keepCase: true })) as any).grpc.reflection.v1.ServerReflection;
    const reflection = new Reflection(`127.0.0.1:${gw.grpc!.port}`, grpc.credentials.createInsecure());
    track(reflection);
    const call = reflection.ServerReflectionInfo();
    const answer = new Promise<any>((resolve, reject) => {
      call.on('data', resolve);
      call.on('error', reject);
    });
    call.write({ list_services: '' });
    const services = (await answer).list_services_response.service.map((s: { name: string }) => s.name);
    call.end();
    expect(services).toContain('proto.gateway.v1.EventGateway');
  });

  it('ends a reader that leaves too much unread with RESOURCE_EXHAUSTED instead of buffering without bound', async () => {
    const gw = await startTestGateway(gatewayYaml(`${GRPC}\nsse: { maxBufferedBytes: 64kb }`));
    const { client } = await clientFromManifest(gw);
    const call = client.Subscribe({});
    const ended = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    call.pause();
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 1);
    const big = 'x'.repeat(16 * 1024);
    for (let i = 0; i < 200 && (await metricValue(gw, 'proto_gateway_grpc_streams')) === 1; i++) {
      await append(gw, Array.from({ length: 10 }, () => cloudEvent('BulkV1', { data: { big } })));
    }
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 0);
    call.resume();
    call.on('data', () => {});
    const error = await ended;
    expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(error.metadata.get('proto-error-code')).toEqual(['SLOW_CONSUMER']);
  });

  it('ends open streams with UNAVAILABLE when the gateway shuts down', async () => {
    const gw = await startTestGateway(gatewayYaml(GRPC));
    const { client } = await clientFromManifest(gw);
    const call = client.Subscribe({});
    call.on('data', () => {});
    const ended = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 1);
    await gw.close();
    const error = await ended;
    expect(error.code).toBe(grpc.status.UNAVAILABLE);
    expect(error.details).toMatch(/shutting down/);
    expect(error.metadata.get('proto-error-code')).toEqual(['NOT_READY']);
  });

  it('ends an open health Watch at shutdown (NOT_SERVING, then UNAVAILABLE) instead of holding it for server.shutdownTimeout', async () => {
    // A 5-minute shutdownTimeout: were the Watch kept open, close() would outlast the test's timeout.
    const gw = await startTestGateway(`server: { host: 127.0.0.1, port: 0, shutdownTimeout: 5m }\nstorage: { driver: memory }\n${GRPC}`);
    const health = (grpc.loadPackageDefinition(protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String })) as any).grpc.health.v1.Health;
    const watcher = new health(`127.0.0.1:${gw.grpc!.port}`, grpc.credentials.createInsecure());
    track(watcher);
    const watch = watcher.Watch({ service: 'proto.gateway.v1.EventGateway' });
    const statuses: string[] = [];
    watch.on('data', (message: { status: string }) => statuses.push(message.status));
    const ended = new Promise<grpc.ServiceError>((resolve) => watch.on('error', resolve));
    await eventually(() => statuses.includes('SERVING') || undefined);
    await gw.close();
    const error = await ended;
    expect(error.code).toBe(grpc.status.UNAVAILABLE);
    expect(error.metadata.get('proto-error-code')).toEqual(['NOT_READY']);
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
  });

  it('every refusal carries proto-error-code: unauthenticated Subscribe and unary calls alike', async () => {
    const gw = await startTestGateway(gatewayYaml(`${GRPC}\n${AUTH}`));
    const { client } = await clientFromManifest(gw);
    const unaryError = await unary(client, 'ListEvents', {}).catch((err) => err);
    expect(unaryError.metadata.get('proto-error-code')).toEqual(['UNAUTHENTICATED']);
    const stream = client.Subscribe({}, metadata());
    const streamError = await new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    expect(streamError.metadata.get('proto-error-code')).toEqual(['UNAUTHENTICATED']);
  });
});
