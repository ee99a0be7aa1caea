/** The `grpc:` section: absent = gRPC off; present = listen on host (127.0.0.1) and port (9090). */
import { num, text } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';
import type { GatewayConfig } from '../../config/types.ts';

/** `grpc:`. */
export const grpcSection: ConfigSection<'grpc'> = {
  key: 'grpc',
  defaults(value) {
    if (value === undefined) return undefined;
    const raw = asMap(value);
    const config: NonNullable<GatewayConfig['grpc']> = { host: text(raw.host, '127.0.0.1'), port: num(raw.port, 9090) };
    if (typeof raw.publicEndpoint === 'string') config.publicEndpoint = raw.publicEndpoint;
    return config;
  },
};
