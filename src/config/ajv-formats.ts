/**
 * ajv-formats for the ajv instances of the config layer. The plugin is CommonJS: under `nodenext`
 * its default import arrives as the module object, so the function is taken from `.default` when
 * present.
 */
import type { Ajv } from 'ajv';
import formatsModule from 'ajv-formats';

type FormatsPlugin = (ajv: Ajv) => Ajv;

/** Adds the ajv-formats formats (uri, date-time, email…) to `ajv` and returns it. */
export function withFormats<T extends Ajv>(ajv: T): T {
  const module = formatsModule as unknown as { default?: FormatsPlugin };
  const plugin = module.default ?? (formatsModule as unknown as FormatsPlugin);
  plugin(ajv);
  return ajv;
}
