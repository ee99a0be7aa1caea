/** The gateway's own version (its service entry in the manifest), read from package.json once. */
import { readFileSync } from 'node:fs';

export const GATEWAY_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
