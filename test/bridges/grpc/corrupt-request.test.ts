/**
 * Regression (found by the fuzz suite, seed 1084874123): a request whose bytes are not a valid
 * protobuf message was answered INTERNAL ("Error deserializing request") by grpc-js, a server fault
 * for bad client input. It is INVALID_ARGUMENT now, after admission like any request.
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway, track } from '../../support/gateway.ts';
import { keyMetadata } from '../../support/grpc.ts';

afterEach(closeAll);

function raw(port: number, method: string, bytes: Buffer, md: grpc.Metadata): Promise<grpc.ServiceError | null> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  track({ close: async () => client.close() });
  return new Promise((resolve) => {
    client.makeUnaryRequest(`/proto.gateway.v1.EventGateway/${method}`, (b: Buffer) => b, (b: Buffer) => b, bytes, md, (err) => resolve(err));
  });
}

describe('gRPC: corrupted protobuf requests', () => {
  it('are INVALID_ARGUMENT (not INTERNAL), and an unauthenticated one is still UNAUTHENTICATED first', async () => {
    const gw = await startTestGateway(gatewayYaml(`grpc: { host: 127.0.0.1, port: 0 }
auth: { type: apiKey, keys: [{ id: w, key: w-key, scopes: [read, write] }] }`));
    const corrupt = Buffer.from('c8fc04d13bca028d1e', 'hex');
    for (const method of ['SubmitCommand', 'ListEvents']) {
      const err = await raw(gw.grpc!.port, method, corrupt, keyMetadata('w-key'));
      expect(err?.code, method).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err?.details).toMatch(/protobuf/);
    }
    const anonymous = await raw(gw.grpc!.port, 'SubmitCommand', corrupt, keyMetadata());
    expect(anonymous?.code).toBe(grpc.status.UNAUTHENTICATED);
  });
});

describe('gRPC: refusal details with characters outside ASCII (regression: process crash)', () => {
  it('answers INVALID_ARGUMENT with the details as ASCII-escaped JSON, and keeps serving', async () => {
    const gw = await startTestGateway(gatewayYaml('grpc: { host: 127.0.0.1, port: 0 }'));
    const { grpcClient, unary } = await import('../../support/grpc.ts');
    const client = grpcClient(gw.grpc!.port);
    const err = await unary(client, 'ListEvents', { from: '🙂', source: '%2e%2e' }).catch((e: grpc.ServiceError) => e);
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const details = err.metadata.get('proto-error-details')[0] as string;
    expect(JSON.parse(details)).toEqual({ parameter: 'from', value: '🙂' });
    expect(await unary(client, 'ListEvents', {})).toMatchObject({ events: [] });
  });
});
