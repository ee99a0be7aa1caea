/**
 * Compiles every JSONata mapping field of the legacy backends (DESIGN.md, "Mapping fields are
 * JSONata") so that a bad expression or template is a config problem at its key, found by
 * `validate` and at load, never by the first request that uses it.
 */
import { compileExpression, compileTemplate, MappingError } from '../mapping/jsonata.ts';
import type { ConfigPath } from './problems.ts';
import { asMap, asText, entries, legacyBackends, type RawMap } from './raw.ts';
import type { Reporter } from './yaml-source.ts';

type Form = 'expression' | 'template';

/** Where the mapping fields sit in each kind of legacy entry, and which form each one has. */
const commandFields: [string[], Form][] = [
  [['request', 'path'], 'template'],
  [['request', 'body'], 'expression'],
  [['events', 'success', 'data'], 'expression'],
];
const queryFields: [string[], Form][] = [
  [['request', 'path'], 'template'],
  [['request', 'query'], 'expression'],
  [['result'], 'expression'],
];
const recordFields: [string[], Form][] = [
  [['items'], 'expression'],
  [['cursor', 'field'], 'expression'],
  [['event', 'type'], 'template'],
  [['event', 'id'], 'template'],
  [['event', 'source'], 'template'],
  [['event', 'time'], 'expression'],
  [['event', 'correlation'], 'expression'],
  [['event', 'data'], 'expression'],
];

/** Compiles every mapping field of every legacy backend, reporting each one that does not compile. */
export function checkMappings(config: RawMap, report: Reporter): void {
  for (const [index, backend] of legacyBackends(config)) {
    const base: ConfigPath = ['backends', index];
    checkEntries(backend.commands, [...base, 'commands'], commandFields, report);
    checkEntries(backend.queries, [...base, 'queries'], queryFields, report);
    checkEntries(backend.records, [...base, 'records'], recordFields, report);
  }
}

function checkEntries(list: unknown, path: ConfigPath, fields: [string[], Form][], report: Reporter): void {
  for (const [index, entry] of entries(list)) {
    for (const [field, form] of fields) checkField(entry, [...path, index], field, form, report);
  }
}

function checkField(entry: RawMap, path: ConfigPath, field: string[], form: Form, report: Reporter): void {
  const source = asText(field.reduce<unknown>((node, key) => asMap(node)[key], entry));
  if (!source) return;
  try {
    if (form === 'template') compileTemplate(source);
    else compileExpression(source);
  } catch (err) {
    if (!(err instanceof MappingError)) throw err;
    report([...path, ...field], `invalid JSONata ${form}: ${err.message}`, { offset: err.position });
  }
}
