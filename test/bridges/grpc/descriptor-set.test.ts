/**
 * `proto/descriptors.pb` (compiled by `proto/build-descriptors.sh` with protoc, committed) says
 * the same as the `.proto` files it was compiled from: every message with the same fields
 * (names, numbers, labels, types; maps as protoc's `…Entry` types), every enum, and every service
 * with the same methods. A `.proto` edited without rerunning the script fails here.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { describe, expect, it } from 'vitest';
import { fileDescriptors } from '../../../src/bridges/grpc/descriptor-set.ts';
import { DESCRIPTOR_SET_PATH, PROTO_DIR } from '../../../src/bridges/grpc/grpc-bridge.ts';

const require = createRequire(import.meta.url);

/** The sources the script compiles: the gateway's files, and the health and reflection files of their packages. */
function sourceRoot(): protobuf.Root {
  const reflection = join(require.resolve('@grpc/reflection/package.json'), '..', 'build/proto/grpc/reflection');
  const health = join(require.resolve('grpc-health-check/package.json'), '..', 'proto/health/v1/health.proto');
  const files = [join(PROTO_DIR, 'gateway.proto'), health, join(reflection, 'v1/reflection.proto'), join(reflection, 'v1alpha/reflection.proto')];
  const root = new protobuf.Root().loadSync(files, { keepCase: true });
  root.resolveAll();
  return root;
}

function compiledRoot(): protobuf.Root {
  const set = (descriptor as any).FileDescriptorSet.decode(readFileSync(DESCRIPTOR_SET_PATH));
  return (protobuf.Root as any).fromDescriptor(set).resolveAll();
}

/** One line per field, enum value and method, by full name; maps spelled as protoc compiles them. */
function shape(root: protobuf.Root): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const visit = (ns: protobuf.NamespaceBase): void => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Type) {
        const lines: string[] = [];
        for (const field of nested.fieldsArray) {
          if (field instanceof protobuf.MapField) {
            const entry = `${nested.fullName}.${field.name[0]!.toUpperCase()}${field.name.slice(1).replace(/_(\w)/g, (_m, c: string) => c.toUpperCase())}Entry`;
            lines.push(`${field.name}=${field.id} repeated ${entry}`);
            out.set(entry, [`key=1 optional ${field.keyType}`, `value=2 optional ${field.resolvedType?.fullName ?? field.type}`]);
          } else {
            lines.push(`${field.name}=${field.id} ${field.repeated ? 'repeated' : 'optional'} ${field.resolvedType?.fullName ?? field.type}${field.partOf ? ` oneof ${field.partOf.name}` : ''}`);
          }
        }
        out.set(nested.fullName, lines.sort());
        visit(nested);
      } else if (nested instanceof protobuf.Enum) {
        out.set(nested.fullName, Object.entries(nested.values).map(([k, v]) => `${k}=${v}`).sort());
      } else if (nested instanceof protobuf.Service) {
        out.set(nested.fullName, nested.methodsArray.map((m) => `${m.name}(${m.requestStream ? 'stream ' : ''}${m.resolvedRequestType?.fullName}) ${m.responseStream ? 'stream ' : ''}${m.resolvedResponseType?.fullName}`).sort());
      } else if (nested instanceof protobuf.Namespace) {
        visit(nested);
      }
    }
  };
  visit(root);
  return out;
}

describe('proto/descriptors.pb', () => {
  it('matches the .proto files it was compiled from (rerun proto/build-descriptors.sh after editing one)', () => {
    const source = shape(sourceRoot());
    const compiled = shape(compiledRoot());
    // protobufjs's built-in google/protobuf definitions carry more types than protoc's imports need.
    for (const name of source.keys()) if (name.startsWith('.google.protobuf.') && !compiled.has(name)) source.delete(name);
    expect(Object.fromEntries([...compiled].sort())).toEqual(Object.fromEntries([...source].sort()));
    expect(compiled.get('.proto.gateway.v1.EventGateway')).toEqual([
      'ListEvents(.proto.gateway.v1.ListEventsRequest) .proto.gateway.v1.ListEventsResponse',
      'SubmitCommand(.io.cloudevents.v1.CloudEvent) .proto.gateway.v1.SubmitCommandResponse',
      'Subscribe(.proto.gateway.v1.SubscribeRequest) stream .io.cloudevents.v1.CloudEvent',
    ]);
  });

  it('splits into its files, each a whole FileDescriptorProto, dependencies first', () => {
    const files = fileDescriptors(readFileSync(DESCRIPTOR_SET_PATH)).map((bytes) => (descriptor as any).FileDescriptorProto.decode(bytes).name as string);
    expect(files.indexOf('cloudevents.proto')).toBeLessThan(files.indexOf('gateway.proto'));
    expect(files.indexOf('google/protobuf/any.proto')).toBeLessThan(files.indexOf('cloudevents.proto'));
    expect(files).toContain('grpc/health/v1/health.proto');
    expect(() => fileDescriptors(Buffer.from([0x12, 0x01, 0x00]))).toThrow(/not a FileDescriptorSet/);
    expect(() => fileDescriptors(Buffer.from([0x0a, 0x05, 0x00]))).toThrow(/runs past the end/);
  });
});
