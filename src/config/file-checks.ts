/**
 * Files the configuration names that the gateway reads only once running (today: the extra CA of
 * webhook delivery): checked at load time, so `validate` refuses what `serve` could not start with.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { asMap, asText, type RawMap } from './raw.ts';
import type { Reporter } from './yaml-source.ts';

/** Reports a `webhooks.ca` that cannot be read or holds no PEM certificate. */
export async function checkReferencedFiles(config: RawMap, baseDir: string, report: Reporter): Promise<void> {
  const ca = asText(asMap(config.webhooks).ca);
  if (ca === undefined) return;
  const path = ['webhooks', 'ca'];
  let text: string;
  try {
    text = await readFile(resolve(baseDir, ca), 'utf8');
  } catch (err) {
    report(path, `cannot read ${resolve(baseDir, ca)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    return;
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) report(path, `${resolve(baseDir, ca)} holds no PEM certificate`);
}
