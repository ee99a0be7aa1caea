/** The `registry:` section: the networks runtime-registered service endpoints may lie in (none by default). */
import { strings } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import { checkNetworks } from '../config/semantic-checks.ts';

/** `registry:`. */
export const registrySection: ConfigSection<'registry'> = {
  key: 'registry',
  schema: {
    "type": "object",
    "description": "Services registered at runtime (POST /services).",
    "additionalProperties": false,
    "properties": {
      "allowNetworks": {
        "type": "array",
        "description": "CIDRs a registered service endpoint may resolve to. Default none (registration refused).",
        "items": {
          "type": "string",
          "description": "A CIDR block, e.g. 10.0.0.0/8 or ::1/128."
        },
        "default": []
      }
    }
  },
  check: (config, report) => checkNetworks(asMap(config.registry).allowNetworks, ['registry', 'allowNetworks'], report),
  defaults: (value) => ({ allowNetworks: strings(asMap(value).allowNetworks) }),
};
