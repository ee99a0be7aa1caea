/** The `console:` section: the operator console (served by default at `/console`). */
import { flag, text } from '../config/defaults.ts';
import { asMap, asText } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import { GATEWAY_ROUTE_ROOTS } from '../http/route-roots.ts';

/** `console:`. Check: its path leaves the gateway's own routes alone. */
export const consoleSection: ConfigSection<'console'> = {
  key: 'console',
  schema: {
    "type": "object",
    "description": "The operator console: a static page served by the gateway that uses the public API with the caller's key.",
    "additionalProperties": false,
    "properties": {
      "enabled": {
        "type": "boolean",
        "description": "Serve the console. Default true; false: its path answers 404.",
        "default": true
      },
      "path": {
        "type": "string",
        "description": "Where the console is served: one or more path segments, no trailing slash. Default /console.",
        "pattern": "^(/[A-Za-z0-9._~-]+)+$",
        "default": "/console"
      }
    }
  },
  check(config, report) {
    const root = asText(asMap(config.console).path)?.split('/')[1];
    if (root !== undefined && GATEWAY_ROUTE_ROOTS.has(root)) {
      report(['console', 'path'], `/${root} is the gateway's own route; choose another path (e.g. /console)`);
    }
  },
  defaults(value) {
    const raw = asMap(value);
    return { enabled: flag(raw.enabled, true), path: text(raw.path, '/console') };
  },
};
