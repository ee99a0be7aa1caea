/**
 * Checks a JSON Schema cannot express (uniqueness across backends, credentials that exist when
 * authentication is on, CIDR syntax, URL shape, naming conventions): each section brings its own
 * (`ConfigSection.check`); they run beside the schema check on the raw data, so they guard every
 * access. The helpers below are shared by the sections' checks.
 */
import ipaddr from 'ipaddr.js';
import type { ConfigPath } from './problems.ts';
import { asList, type RawMap } from './raw.ts';
import type { ConfigSections, SectionKey } from './section.ts';
import type { Reporter } from './yaml-source.ts';

/** Runs every section's semantic check on the parsed config. */
export function checkSemantics(config: RawMap, report: Reporter, sections: ConfigSections): void {
  for (const key of Object.keys(sections) as SectionKey[]) sections[key].check?.(config, report);
}

/** Runs every section's check of the files it names (relative to `baseDir`). */
export async function checkSectionFiles(config: RawMap, baseDir: string, report: Reporter, sections: ConfigSections): Promise<void> {
  for (const key of Object.keys(sections) as SectionKey[]) await sections[key].checkFiles?.(config, baseDir, report);
}

/** Reports each entry of `list` that is not a CIDR block. */
export function checkNetworks(list: unknown, path: ConfigPath, report: Reporter): void {
  asList(list).forEach((cidr, index) => {
    if (typeof cidr === 'string' && !ipaddr.isValidCIDR(cidr)) report([...path, index], `"${cidr}" is not a CIDR block (e.g. 10.0.0.0/8)`);
  });
}

/**
 * A uniqueness tracker: `seen(value, path, message, label)` reports `message(firstLabel)` at `path`
 * when `value` was seen before; undefined values are ignored.
 */
export function firstSeen(report: Reporter) {
  const first = new Map<string, string | number>();
  return (value: string | undefined, path: ConfigPath, message: (first: string | number) => string, label: string | number) => {
    if (value === undefined) return;
    const earlier = first.get(value);
    if (earlier === undefined) first.set(value, label);
    else report(path, message(earlier));
  };
}
