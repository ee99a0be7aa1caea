/**
 * `config/gateway.schema.json` (read by editors through `$schema` and by external tools) is the
 * schema the gateway validates with: the document assembled from every feature's section piece.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assembleConfigSchema } from '../../src/config/config-schema.ts';
import { CONFIG_SECTIONS } from '../../src/gateway-config.ts';

const file = JSON.parse(readFileSync(new URL('../../config/gateway.schema.json', import.meta.url), 'utf8'));

describe('config/gateway.schema.json', () => {
  it('equals the schema assembled from the sections (edit a section piece and the file alike)', () => {
    expect(assembleConfigSchema(CONFIG_SECTIONS)).toEqual(file);
  });

  it('names every section the gateway loads, and no other', () => {
    expect(Object.keys(file.properties).filter((key) => key !== '$schema').sort()).toEqual(Object.keys(CONFIG_SECTIONS).sort());
  });
});
