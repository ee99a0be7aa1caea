/** The `commands:` section: the idempotency window, rate limit and dispatch of the command path. */
import { ms, num, schedule } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import type { CommandsConfig } from '../config/types.ts';

/** `commands:` (window 24h, no rate limit, dispatch timeout 10s, 16 at once, retries 1s…1h). */
export const commandsSection: ConfigSection<'commands'> = {
  key: 'commands',
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
