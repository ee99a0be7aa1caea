/**
 * The manifest's gRPC endpoint when `grpc.host` binds every interface and no
 * `grpc.publicEndpoint` is set: the public URL's host with the gRPC port, never `0.0.0.0:9090`.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/gateway-config.ts';
import { gatewayTransports } from '../../src/manifest/gateway-capabilities.ts';

async function transportsOf(grpc: string) {
  const config = await parseConfig(`server: { host: 0.0.0.0, port: 8080, publicUrl: "https://gw.example.com/" }\ngrpc: ${grpc}\n`, '/tmp/gateway.yaml', {});
  return gatewayTransports(config, config.server.publicUrl!);
}

describe('advertised gRPC endpoint', () => {
  it('a wildcard grpc.host advertises the public URL\'s host with the gRPC port', async () => {
    expect((await transportsOf('{ host: 0.0.0.0, port: 9090 }')).grpc?.endpoint).toBe('gw.example.com:9090');
    expect((await transportsOf('{ host: "::", port: 9090 }')).grpc?.endpoint).toBe('gw.example.com:9090');
  });

  it('grpc.publicEndpoint wins, and a specific host is advertised as it is', async () => {
    expect((await transportsOf('{ host: 0.0.0.0, port: 9090, publicEndpoint: "grpc.example.com:443" }')).grpc?.endpoint).toBe('grpc.example.com:443');
    expect((await transportsOf('{ host: 10.1.2.3, port: 9090 }')).grpc?.endpoint).toBe('10.1.2.3:9090');
  });
});
