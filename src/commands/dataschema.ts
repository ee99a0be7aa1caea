/**
 * The `dataschema` rule of `POST /commands` (PROTOCOL-NOTES.md, Commands): the caller's
 * `dataschema` is informational and is never fetched (an SSRF vector), but it must name the
 * catalogue entry of the command's `type`, either as a public URI (root or per service) or in the
 * relative form `{schema}/{version}`. Anything else is a 400 `DATASCHEMA_MISMATCH`.
 */
import type { CommandCatalogue, CommandEntry } from '../catalogue/command-catalogue.ts';
import { ProtoError } from '../errors.ts';

/**
 * Returns the normalised `dataschema`, the relative `{schema}/{version}` (stable when `publicUrl`
 * changes, so a fingerprint survives a restart on another address), or throws `DATASCHEMA_MISMATCH`.
 */
export function matchDataschema(dataschema: string, entry: CommandEntry, catalogue: CommandCatalogue): string {
  const canonical = catalogue.dataschemaOf(entry);
  const relative = `${entry.schema}/${entry.version}`;
  if (dataschema === relative || dataschema === canonical || dataschema === catalogue.dataschemaOf(entry, entry.backend)) return relative;
  throw new ProtoError('DATASCHEMA_MISMATCH', `dataschema must name the catalogue entry of ${entry.type}: ${canonical} or ${entry.schema}/${entry.version}`, {
    expected: canonical,
  });
}
