/** The `console:` section: the operator console (served by default at `/console`). */
import { flag, text } from '../config/defaults.ts';
import { asMap, asText } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import { GATEWAY_ROUTE_ROOTS } from '../http/route-roots.ts';

/** `console:`. Check: its path leaves the gateway's own routes alone. */
export const consoleSection: ConfigSection<'console'> = {
  key: 'console',
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
