/**
 * The JSON Schema of the whole configuration, assembled from the sections' pieces: the document's
 * own keys, `properties` in section order (after `$schema`, which lets a file name its schema),
 * and `definitions`: the shared ones below, then each section's. `config/gateway.schema.json` is
 * this document, for editors and external tools (test/config/schema-file.test.ts keeps them equal:
 * a key added to a piece is added to the file too).
 */
import type { ConfigSections, JsonSchema, SectionKey } from './section.ts';

/** The document's own keys (draft-07, id, title, description; unknown sections refused). */
const ROOT: JsonSchema = {
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://proto-gateway.dev/schemas/gateway.schema.json",
  "title": "proto-gateway configuration",
  "description": "Configuration of proto-gateway (DESIGN.md, Configuration contract). Durations: 500ms, 5s, 10m, 2h, 30d. Sizes (binary): 10b, 512kb, 1mb. ${VAR} in a string value is replaced from the environment; $${VAR} is a literal ${VAR}.",
  "type": "object",
  "additionalProperties": false
};

/** The `$schema` key a config file may carry (for editors). */
const SCHEMA_KEY: JsonSchema = {
  "type": "string",
  "description": "JSON Schema of this file (for editors); ignored by the gateway."
};

/** Named schemas shared by several sections: durations, sizes, URLs, versions. */
export const SHARED_DEFINITIONS: Record<string, JsonSchema> = {
  "duration": {
    "type": "string",
    "pattern": "^[0-9]+(ms|s|m|h|d)$",
    "description": "A duration: integer and unit ms, s, m, h or d (e.g. 500ms, 30s, 30d)."
  },
  "size": {
    "type": "string",
    "pattern": "^[0-9]+([kKmMgG]?[bB])$",
    "description": "A size in bytes: integer and unit b, kb, mb or gb; binary (1mb = 2^20 bytes)."
  },
  "httpUrl": {
    "type": "string",
    "format": "uri",
    "pattern": "^https?://[^/?#]",
    "description": "An absolute http or https URL."
  },
  "redisUrl": {
    "type": "string",
    "format": "uri",
    "pattern": "^rediss?://",
    "description": "A redis:// or rediss:// URL."
  },
  "semver": {
    "type": "string",
    "pattern": "^\\d+\\.\\d+\\.\\d+$",
    "description": "Semver MAJOR.MINOR.PATCH."
  }
};

/** The whole configuration schema of `sections`. */
export function assembleConfigSchema(sections: ConfigSections): JsonSchema {
  const properties: Record<string, JsonSchema> = { $schema: SCHEMA_KEY };
  const definitions: Record<string, JsonSchema> = { ...SHARED_DEFINITIONS };
  for (const key of Object.keys(sections) as SectionKey[]) {
    const section = sections[key];
    if (section.schema) properties[key] = section.schema;
    Object.assign(definitions, section.definitions);
  }
  return { ...ROOT, properties, definitions };
}
