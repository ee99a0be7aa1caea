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
