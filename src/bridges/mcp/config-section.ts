/** The `mcp:` section: the MCP server (on by default), its session bound and idle timeout. */
import { flag, ms, num, perPrincipalDefault } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';

/** `mcp:` (enabled, 1000 sessions, half of them per principal, idle 30m). */
export const mcpSection: ConfigSection<'mcp'> = {
  key: 'mcp',
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
