/**
 * The compiled descriptors of the gRPC surface: `proto/descriptors.pb`, a `FileDescriptorSet`
 * written by `protoc --include_imports` (`proto/build-descriptors.sh`) from `gateway.proto`,
 * `cloudevents.proto`, the well-known types they import, and the health and reflection services.
 * Server reflection serves these files byte for byte, under their real names and with their real
 * `dependency` lists, so a reflection-only client (grpcurl, Python's reflection client, a
 * descriptor pool) can load them and call every method. proto-loader's own descriptors could not
 * serve: they are re-derived per package, lose their imports, and misname map entries.
 */
import { readFileSync } from 'node:fs';
import type { PackageDefinition } from '@grpc/proto-loader';

/** The set, and each `FileDescriptorProto` in it as its own encoded bytes. */
export interface DescriptorSet {
  bytes: Buffer;
  files: Buffer[];
}

/** Reads a `FileDescriptorSet` file. */
export function readDescriptorSet(path: string): DescriptorSet {
  const bytes = readFileSync(path);
  return { bytes, files: fileDescriptors(bytes) };
}

/**
 * The set as what `@grpc/reflection` indexes (it reads only `fileDescriptorProtos` of each
 * definition): one entry holding every file of the set, in the set's order (dependencies first).
 */
export function reflectionPackage(set: DescriptorSet): PackageDefinition {
  return { 'descriptor-set': { format: 'Protocol Buffer 3 DescriptorProto', type: {}, fileDescriptorProtos: set.files } } as unknown as PackageDefinition;
}

/**
 * Splits an encoded `FileDescriptorSet` (`repeated FileDescriptorProto file = 1`) into the encoded
 * files: each is one length-delimited field 1 (protobuf encoding: tag varint, length varint, bytes).
 */
export function fileDescriptors(bytes: Buffer): Buffer[] {
  const files: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const tag = varint(bytes, at);
    if (tag.value !== (1 << 3 | 2)) throw new Error(`not a FileDescriptorSet: field tag ${tag.value} at byte ${at}`);
    const length = varint(bytes, tag.next);
    const end = length.next + length.value;
    if (end > bytes.length) throw new Error('not a FileDescriptorSet: a file runs past the end');
    files.push(bytes.subarray(length.next, end));
    at = end;
  }
  return files;
}

function varint(bytes: Buffer, at: number): { value: number; next: number } {
  let value = 0;
  for (let shift = 0, i = at; i < bytes.length && shift < 35; shift += 7, i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value, next: i + 1 };
  }
  throw new Error(`not a FileDescriptorSet: a bad varint at byte ${at}`);
}
