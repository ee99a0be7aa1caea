/** The `events:` section: page sizes of `GET /events`, the largest ingested event and the log's retention. */
import { bytes, ms, num } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import type { EventsConfig } from '../config/types.ts';

/** `events:` (pages of 100, at most 1000; retention 10,000,000 events or 30d). */
export const eventsSection: ConfigSection<'events'> = {
  key: 'events',
  schema: {
    "type": "object",
    "description": "The event log.",
    "additionalProperties": false,
    "properties": {
      "pageSize": {
        "type": "object",
        "description": "Page size of GET /events.",
        "additionalProperties": false,
        "properties": {
          "default": {
            "type": "integer",
            "description": "Events per page without a limit parameter. Default 100.",
            "minimum": 1,
            "default": 100
          },
          "max": {
            "type": "integer",
            "description": "Largest page; a larger limit is capped. Default 1000.",
            "minimum": 1,
            "default": 1000
          }
        }
      },
      "maxEventBytes": {
        "$ref": "#/definitions/size",
        "description": "One event's JSON at most, as ingested from a backend (polled records, proto pages and streams). A larger event is refused once at ingestion: logged, counted in proto_gateway_events_too_large_total{backend}, skipped (the cursor moves past it). Events up to it are delivered on every transport whatever sse.maxBufferedBytes is. Default 2mb (below grpc-js clients' default 4 MiB receive limit).",
        "default": "2mb"
      },
      "retention": {
        "type": "object",
        "description": "How much of the log is kept.",
        "additionalProperties": false,
        "properties": {
          "maxEvents": {
            "type": "integer",
            "description": "Most events kept; 0 = no count limit. Default 10000000.",
            "minimum": 0,
            "default": 10000000
          },
          "maxAge": {
            "$ref": "#/definitions/duration",
            "description": "Oldest event kept; 0s = no age limit. Default 30d.",
            "default": "30d"
          }
        }
      }
    }
  },
  check(config, report) {
    const pageSize = asMap(asMap(config.events).pageSize);
    if (typeof pageSize.default === 'number' && typeof pageSize.max === 'number' && pageSize.default > pageSize.max) {
      report(['events', 'pageSize', 'default'], `must not exceed events.pageSize.max (${pageSize.max})`);
    }
  },
  defaults(value): EventsConfig {
    const raw = asMap(value);
    const pageSize = asMap(raw.pageSize);
    const retention = asMap(raw.retention);
    return {
      pageSize: { default: num(pageSize.default, 100), max: num(pageSize.max, 1000) },
      maxEventBytes: bytes(raw.maxEventBytes, '2mb'),
      retention: { maxEvents: num(retention.maxEvents, 10_000_000), maxAgeMs: ms(retention.maxAge, '30d') },
    };
  },
};
