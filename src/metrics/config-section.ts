/** The `metrics:` section: whether `/metrics` is public (default false: it needs the admin scope). */
import { flag } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';

/** `metrics:`. */
export const metricsSection: ConfigSection<'metrics'> = {
  key: 'metrics',
  schema: {
    "type": "object",
    "description": "Prometheus metrics at /metrics.",
    "additionalProperties": false,
    "properties": {
      "public": {
        "type": "boolean",
        "description": "true: /metrics without credentials; false: needs the read scope. Default false.",
        "default": false
      }
    }
  },
  defaults: (value) => ({ public: flag(asMap(value).public, false) }),
};
