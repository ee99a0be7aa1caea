/** The `commands:` section: the idempotency window, rate limit and dispatch of the command path. */
import { ms, num, schedule } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import type { CommandsConfig } from '../config/types.ts';

/** `commands:` (window 24h, no rate limit, dispatch timeout 10s, 16 at once, retries 1s…1h). */
export const commandsSection: ConfigSection<'commands'> = {
  key: 'commands',
  schema: {
    "type": "object",
    "description": "The command path.",
    "additionalProperties": false,
    "properties": {
      "idempotencyWindow": {
        "$ref": "#/definitions/duration",
        "description": "How long a command id is remembered per principal (duplicates: 409). Default 24h.",
        "default": "24h"
      },
      "rateLimit": {
        "type": "object",
        "description": "Commands per principal; 0 = off. Under storage.driver redis one bucket per principal is shared by every replica.",
        "additionalProperties": false,
        "properties": {
          "perSecond": {
            "type": "number",
            "minimum": 0,
            "default": 0,
            "description": "Sustained commands per second per principal; 0 = no limit. Default 0."
          },
          "burst": {
            "type": "integer",
            "description": "Commands allowed at once above the rate. Default 0.",
            "minimum": 0,
            "default": 0
          }
        }
      },
      "dispatch": {
        "type": "object",
        "description": "Delivery of accepted commands to backends.",
        "additionalProperties": false,
        "properties": {
          "timeout": {
            "$ref": "#/definitions/duration",
            "description": "Timeout of one backend call. Default 10s.",
            "default": "10s"
          },
          "concurrency": {
            "type": "integer",
            "description": "Calls in flight per backend. Default 16.",
            "minimum": 1,
            "default": 16
          },
          "retry": {
            "type": "object",
            "description": "Retries of a failed backend call.",
            "additionalProperties": false,
            "properties": {
              "schedule": {
                "type": "array",
                "description": "Delays of the retries after the first try: N entries = N retries. Default [1s, 5s, 30s, 2m, 10m, 30m, 1h].",
                "items": {
                  "$ref": "#/definitions/duration",
                  "description": "Delay before this retry."
                },
                "default": [
                  "1s",
                  "5s",
                  "30s",
                  "2m",
                  "10m",
                  "30m",
                  "1h"
                ]
              }
            }
          }
        }
      }
    }
  },
  defaults(value): CommandsConfig {
    const raw = asMap(value);
    const rateLimit = asMap(raw.rateLimit);
    const dispatch = asMap(raw.dispatch);
    return {
      idempotencyWindowMs: ms(raw.idempotencyWindow, '24h'),
      rateLimit: { perSecond: num(rateLimit.perSecond, 0), burst: num(rateLimit.burst, 0) },
      dispatch: {
        timeoutMs: ms(dispatch.timeout, '10s'),
        concurrency: num(dispatch.concurrency, 16),
        retry: { scheduleMs: schedule(asMap(dispatch.retry).schedule, ['1s', '5s', '30s', '2m', '10m', '30m', '1h']) },
      },
    };
  },
};
