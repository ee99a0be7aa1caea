/** The `mcp:` section: the MCP server (on by default), its session bound and idle timeout. */
import { flag, ms, num, perPrincipalDefault } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';

/** `mcp:` (enabled, 1000 sessions, half of them per principal, idle 30m). */
export const mcpSection: ConfigSection<'mcp'> = {
  key: 'mcp',
  schema: {
    "type": "object",
    "description": "The MCP server surface.",
    "additionalProperties": false,
    "properties": {
      "enabled": {
        "type": "boolean",
        "description": "Serve MCP. Default true.",
        "default": true
      },
      "maxSessions": {
        "type": "integer",
        "description": "Open MCP sessions at most. Default 1000.",
        "minimum": 1,
        "default": 1000
      },
      "idleTimeout": {
        "$ref": "#/definitions/duration",
        "description": "An idle session is closed after this long. Default 30m.",
        "default": "30m"
      },
      "maxSessionsPerPrincipal": {
        "type": "integer",
        "description": "Open MCP sessions per principal at most (beyond: 429 QUOTA_EXCEEDED). Default half of maxSessions.",
        "minimum": 1
      }
    }
  },
  defaults(value) {
    const raw = asMap(value);
    const maxSessions = num(raw.maxSessions, 1000);
    return {
      enabled: flag(raw.enabled, true),
      maxSessions,
      maxSessionsPerPrincipal: num(raw.maxSessionsPerPrincipal, perPrincipalDefault(maxSessions, maxSessions)),
      idleTimeoutMs: ms(raw.idleTimeout, '30m'),
    };
  },
};
