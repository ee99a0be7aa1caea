/** The `a2a:` section: the A2A agent (on by default), its card and its task bounds. */
import { flag, ms, num } from '../../config/defaults.ts';
import { asMap } from '../../config/raw.ts';
import type { ConfigSection } from '../../config/section.ts';
import type { GatewayConfig } from '../../config/types.ts';

/** The agent card's description when `a2a.description` is absent. */
const DEFAULT_AGENT_DESCRIPTION = 'Sends commands to the services behind this gateway and reports the events they produce as task artifacts.';

/** `a2a:` (enabled, settle 2s, timeout 60s, 10,000 tasks kept 24h). */
export const a2aSection: ConfigSection<'a2a'> = {
  key: 'a2a',
  defaults(value): GatewayConfig['a2a'] {
    const raw = asMap(value);
    return {
      enabled: flag(raw.enabled, true),
      settleMs: ms(raw.settle, '2s'),
      timeoutMs: ms(raw.timeout, '60s'),
      name: typeof raw.name === 'string' ? raw.name : 'proto-gateway',
      description: typeof raw.description === 'string' ? raw.description : DEFAULT_AGENT_DESCRIPTION,
      maxTasks: num(raw.maxTasks, 10_000),
      taskTtlMs: ms(raw.taskTtl, '24h'),
      publicSkills: flag(raw.publicSkills, false),
    };
  },
};
