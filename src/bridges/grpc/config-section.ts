/** The `grpc:` section: absent = gRPC off; present = listen on host (127.0.0.1) and port (9090). */
import { num, text } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';
import type { GatewayConfig } from '../../config/types.ts';

/** `grpc:`. */
export const grpcSection: ConfigSection<'grpc'> = {
  key: 'grpc',
  schema: {
    "type": "object",
    "description": "The gRPC surface; absent = gRPC off.",
    "additionalProperties": false,
    "properties": {
      "host": {
        "type": "string",
        "description": "Listen address. Default 127.0.0.1.",
        "minLength": 1,
        "default": "127.0.0.1"
      },
      "port": {
        "type": "integer",
        "description": "Listen port; 0 = any free port. Default 9090.",
        "minimum": 0,
        "maximum": 65535,
        "default": 9090
      },
      "publicEndpoint": {
        "type": "string",
        "description": "host:port advertised in the manifest grpc block. Default: host:port.",
        "minLength": 1
      }
    }
  },
  defaults(value) {
    if (value === undefined) return undefined;
    const raw = asMap(value);
    const config: NonNullable<GatewayConfig['grpc']> = { host: text(raw.host, '127.0.0.1'), port: num(raw.port, 9090) };
    if (typeof raw.publicEndpoint === 'string') config.publicEndpoint = raw.publicEndpoint;
    return config;
  },
};
