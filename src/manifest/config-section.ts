/** The `protocol:` section: the protocol version the manifest announces (default 1.0.0). */
import { text } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';

/** `protocol:`. */
export const protocolSection: ConfigSection<'protocol'> = {
  key: 'protocol',
  schema: {
    "type": "object",
    "description": "The protocol the gateway speaks.",
    "additionalProperties": false,
    "properties": {
      "version": {
        "$ref": "#/definitions/semver",
        "description": "PROTO.version in the manifest. Default 1.0.0.",
        "default": "1.0.0"
      }
    }
  },
  defaults: (value) => ({ version: text(asMap(value).version, '1.0.0') }),
};
