/**
 * Checks on the fields of JSON request bodies (subscriptions, service registrations). Every
 * refusal is a 400 `INVALID_PARAMETER` whose `details.parameter` names the field.
 */
import { ProtoError } from './errors.ts';
import { PASCAL_CASE } from './log/cloud-event-rules.ts';

/** The refusal of field `parameter`: "`parameter` `rule`". */
export function invalidField(parameter: string, rule: string): ProtoError {
  return new ProtoError('INVALID_PARAMETER', `${parameter} ${rule}`, { parameter });
}

/** `value` as a JSON object (not an array, not null). */
export function objectField(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidField(name, 'must be an object');
  return value as Record<string, unknown>;
}

/** `value` as a non-empty string of at most `maxLength` characters. */
export function stringField(value: unknown, name: string, maxLength: number): string {
  if (typeof value !== 'string' || value === '' || value.length > maxLength) {
    throw invalidField(name, `must be a non-empty string of at most ${maxLength} characters`);
  }
  return value;
}

/** `value` as a list of at most `maxItems` PascalCase types (each at most `maxLength`), duplicates dropped. */
export function typeListField(value: unknown, name: string, maxItems: number, maxLength: number): string[] {
  if (!Array.isArray(value) || value.length > maxItems) throw invalidField(name, `must be an array of at most ${maxItems} types`);
  const types = value.map((type, i) => {
    const text = stringField(type, `${name}[${i}]`, maxLength);
    if (!PASCAL_CASE.test(text)) throw invalidField(`${name}[${i}]`, 'must be a type in PascalCase, e.g. OrderPlacedV1');
    return text;
  });
  return [...new Set(types)];
}
