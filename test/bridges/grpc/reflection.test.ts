/**
 * Server reflection as a reflection-only client uses it (grpcurl, Python's reflection client): it
 * knows nothing but the reflection protocol itself; it lists the services, fetches the files
 * declaring them with their dependencies, loads every served descriptor into a descriptor pool
 * (protobufjs from the FileDescriptorProtos), and calls Subscribe and SubmitCommand with no
 * generated stubs and no .proto file.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleBackends, ordersBackend, placeOrder } from '../../commands/support.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway } from '../../support/gateway.ts';
import { metricValue } from '../sse/support.ts';

afterEach(closeAll);

const require = createRequire(import.meta.url);
const clients: grpc.Client[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

interface FileDescriptorProto {
  name: string;
  package: string;
  dependency: string[];
  messageType: Array<{ name: string; nestedType: Array<{ name: string; options?: { mapEntry?: boolean } }> }>;
  service: Array<{ name: string }>;
}

/** The reflection protocol (v1): what every reflection client has compiled in, and nothing more. */
function reflectionClient(address: string) {
  const path = join(require.resolve('@grpc/reflection/package.json'), '..', 'build/proto/grpc/reflection/v1/reflection.proto');
  const Reflection = (grpc.loadPackageDefinition(protoLoader.loadSync(path, { keepCase: true })) as any).grpc.reflection.v1.ServerReflection;
  const client = new Reflection(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
  clients.push(client);
  /** One request on a fresh ServerReflectionInfo stream, its one answer. */
  return (request: Record<string, unknown>): Promise<any> => new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (answer: unknown) => {
      resolve(answer);
      call.end();
    });
    call.on('error', reject);
    call.write(request);
  });
}

/** Every file reflection serves for the listed services, decoded, by name (as a descriptor pool collects them). */
async function collectDescriptors(ask: (request: Record<string, unknown>) => Promise<any>) {
  const listed = await ask({ list_services: '*' });
  const services: string[] = listed.list_services_response.service.map((s: { name: string }) => s.name);
  const files = new Map<string, FileDescriptorProto>();
  for (const service of services) {
    const answer = await ask({ file_containing_symbol: service });
    for (const bytes of answer.file_descriptor_response.file_descriptor_proto as Buffer[]) {
      const file = (descriptor as any).FileDescriptorProto.decode(bytes) as FileDescriptorProto;
      files.set(file.name, file);
    }
  }
  return { services, files };
}

/** A descriptor pool: every collected file, each of its dependencies present. */
function pool(files: Map<string, FileDescriptorProto>): protobuf.Root {
  for (const file of files.values()) {
    for (const dependency of file.dependency) expect(files.has(dependency), `${file.name} imports ${dependency}`).toBe(true);
  }
  return (protobuf.Root as any).fromDescriptor({ file: [...files.values()] }).resolveAll();
}

/** A client of `serviceName` built from the pool alone (no stubs, no .proto). */
function dynamicClient(root: protobuf.Root, serviceName: string, address: string): grpc.Client & Record<string, any> {
  const service = root.lookupService(serviceName);
  const definition: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const method of service.methodsArray) {
    const request = method.resolvedRequestType!;
    const response = method.resolvedResponseType!;
    definition[method.name] = {
      path: `/${serviceName}/${method.name}`,
      requestStream: Boolean(method.requestStream),
      responseStream: Boolean(method.responseStream),
      requestSerialize: (value: object) => Buffer.from(request.encode(request.fromObject(value)).finish()),
      requestDeserialize: (bytes: Buffer) => request.toObject(request.decode(bytes)),
      responseSerialize: (value: object) => Buffer.from(response.encode(response.fromObject(value)).finish()),
      responseDeserialize: (bytes: Buffer) => response.toObject(response.decode(bytes), { longs: String, oneofs: true }),
      originalName: method.name,
    };
  }
  const Client = grpc.makeGenericClientConstructor(definition as grpc.ServiceDefinition, serviceName);
  const client = new Client(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
  clients.push(client);
  return client;
}

describe('gRPC server reflection for reflection-only clients', () => {
  it('lists EventGateway, health and reflection, and serves their real files with their dependencies', async () => {
    const gw = await startTestGateway(gatewayYaml('grpc: { host: 127.0.0.1, port: 0 }'));
    const { services, files } = await collectDescriptors(reflectionClient(`127.0.0.1:${gw.grpc!.port}`));
    expect(services).toEqual(expect.arrayContaining(['proto.gateway.v1.EventGateway', 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection']));
    expect([...files.keys()]).toEqual(expect.arrayContaining(['gateway.proto', 'cloudevents.proto', 'google/protobuf/any.proto', 'google/protobuf/timestamp.proto', 'grpc/health/v1/health.proto']));
    expect(files.get('gateway.proto')?.dependency).toEqual(['cloudevents.proto']);
    expect(files.get('cloudevents.proto')?.dependency).toEqual(['google/protobuf/any.proto', 'google/protobuf/timestamp.proto']);
    // protoc's map entry name, which descriptor pools insist on (proto-loader's was `Attributes`).
    const cloudEvent = files.get('cloudevents.proto')!.messageType.find((m) => m.name === 'CloudEvent')!;
    expect(cloudEvent.nestedType.find((n) => n.options?.mapEntry)?.name).toBe('AttributesEntry');
    // A file asked for by name comes with its imports too.
    const byName = await reflectionClient(`127.0.0.1:${gw.grpc!.port}`)({ file_by_filename: 'gateway.proto' });
    expect(byName.file_descriptor_response.file_descriptor_proto.length).toBe(4);
  });

  it('a client built only from reflection calls SubmitCommand, follows the result with Subscribe, and checks health', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`grpc: { host: 127.0.0.1, port: 0 }\ncommands: { dispatch: { timeout: 2s, retry: { schedule: [50ms] } } }\nbackends:\n${ordersBackend(orders.url)}`));
    const address = `127.0.0.1:${gw.grpc!.port}`;
    const { files } = await collectDescriptors(reflectionClient(address));
    const root = pool(files);
    const gateway = dynamicClient(root, 'proto.gateway.v1.EventGateway', address);

    const command = placeOrder({ sku: 'widget', qty: 2 }) as Record<string, any>;
    const subscription = gateway.Subscribe({ correlation_id: command.id });
    const received = new Promise<any>((resolve, reject) => {
      subscription.on('data', resolve);
      subscription.on('error', reject);
    });
    await eventually(async () => (await metricValue(gw, 'proto_gateway_grpc_streams')) === 1);
    // The pool sees the map as what it is on the wire: repeated AttributesEntry { key, value }.
    const submitted = await new Promise<any>((resolve, reject) => gateway.SubmitCommand({
      id: command.id, source: command.source, spec_version: '1.0', type: command.type,
      attributes: [{ key: 'datacontenttype', value: { ce_string: 'application/json' } }, { key: 'dataschema', value: { ce_uri_ref: command.dataschema } }],
      text_data: JSON.stringify(command.data),
    }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))));
    expect(submitted).toEqual({ id: command.id });
    const event = await received;
    expect(event).toMatchObject({ type: 'OrderPlacedV1', spec_version: '1.0' });
    expect(event.attributes).toEqual(expect.arrayContaining([{ key: 'correlationid', value: { ce_string: command.id, attr: 'ce_string' } }]));
    subscription.cancel();

    const health = dynamicClient(root, 'grpc.health.v1.Health', address);
    const status = await new Promise<any>((resolve, reject) => health.Check({ service: 'proto.gateway.v1.EventGateway' }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))));
    expect(status.status).toBe(1); // SERVING
  });
});
