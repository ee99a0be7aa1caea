/** The `metrics:` section: whether `/metrics` is public (default false: it needs the admin scope). */
import { flag } from '../config/defaults.ts';
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';

/** `metrics:`. */
export const metricsSection: ConfigSection<'metrics'> = {
  key: 'metrics',
  defaults: (value) => ({ public: flag(asMap(value).public, false) }),
};
