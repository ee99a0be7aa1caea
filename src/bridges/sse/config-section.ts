/** The `sse:` section: keepalives and the bounds of `GET /events/stream`. */
import { bytes, flag, ms, num, perPrincipalDefault } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';
import type { SseConfig } from '../../config/types.ts';

/**
 * `sse:` (keepalive 15s, 1mb unread per client, 10,000 streams, 1000 per principal but at most half
 * of `maxConnections`, close on terminal events). The stream bounds count every push transport.
 */
export const sseSection: ConfigSection<'sse'> = {
  key: 'sse',
  schema: {
    "type": "object",
    "description": "GET /events/stream (Server-Sent Events).",
    "additionalProperties": false,
    "properties": {
      "keepalive": {
        "$ref": "#/definitions/duration",
        "description": "Comment line sent on an idle stream this often. Default 15s.",
        "default": "15s"
      },
      "maxBufferedBytes": {
        "$ref": "#/definitions/size",
        "description": "Bytes buffered for a slow client before it is dropped. Default 1mb.",
        "default": "1mb"
      },
      "maxConnections": {
        "type": "integer",
        "description": "Open streams at most, counting SSE, gRPC Subscribe, MCP session streams and A2A streaming calls together (more: 503 STREAMS_EXHAUSTED). Default 10000.",
        "minimum": 1,
        "default": 10000
      },
      "maxConnectionsPerPrincipal": {
        "type": "integer",
        "description": "Open streams per principal at most, counting SSE, gRPC Subscribe, MCP session streams and A2A streaming calls together. Default 1000, and at most half of maxConnections.",
        "minimum": 1
      },
      "closeOnTerminal": {
        "type": "boolean",
        "description": "Close a stream filtered by correlation id after its terminal event. Default true.",
        "default": true
      }
    }
  },
  defaults(value): SseConfig {
    const raw = asMap(value);
    const maxConnections = num(raw.maxConnections, 10_000);
    return {
      keepaliveMs: ms(raw.keepalive, '15s'),
      maxBufferedBytes: bytes(raw.maxBufferedBytes, '1mb'),
      maxConnections,
      maxConnectionsPerPrincipal: num(raw.maxConnectionsPerPrincipal, perPrincipalDefault(maxConnections, 1000)),
      closeOnTerminal: flag(raw.closeOnTerminal, true),
    };
  },
};
