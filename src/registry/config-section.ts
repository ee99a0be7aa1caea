/** The `registry:` section: the networks runtime-registered service endpoints may lie in (none by default). */
import { strings } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import { checkNetworks } from '../config/semantic-checks.ts';

/** `registry:`. */
export const registrySection: ConfigSection<'registry'> = {
  key: 'registry',
  check: (config, report) => checkNetworks(asMap(config.registry).allowNetworks, ['registry', 'allowNetworks'], report),
  defaults: (value) => ({ allowNetworks: strings(asMap(value).allowNetworks) }),
};
