/** The `mcp:` section: the MCP server (on by default), its session bound and idle timeout. */
import { flag, ms, num } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';

/** `mcp:` (enabled, 1000 sessions, idle 30m). */
export const mcpSection: ConfigSection<'mcp'> = {
  key: 'mcp',
  defaults(value) {
    const raw = asMap(value);
    return { enabled: flag(raw.enabled, true), maxSessions: num(raw.maxSessions, 1000), idleTimeoutMs: ms(raw.idleTimeout, '30m') };
  },
};
