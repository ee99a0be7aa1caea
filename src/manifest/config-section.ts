/** The `protocol:` section: the protocol version the manifest announces (default 1.0.0). */
import { text } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';

/** `protocol:`. */
export const protocolSection: ConfigSection<'protocol'> = {
  key: 'protocol',
  defaults: (value) => ({ version: text(asMap(value).version, '1.0.0') }),
};
