/**
 * From a command's JSON Schema to a form and back: `formFields` reads the schema into a list of
 * fields (what to render), `initialValues` gives each its default, and `formData` turns what was
 * typed into the command's `data` or into one message per wrong field. Pure: no DOM, so it is unit
 * tested on its own (test/console/schema-form.test.ts).
 *
 * Mapping: `string` → text, `number`/`integer` → number (with `minimum`/`maximum`), `boolean` →
 * checkbox, `enum` → select, `object` → a group of fields, `array` of scalars → one item per line;
 * anything else (`oneOf`, arrays of objects, …) → a JSON text area checked only for syntax (the
 * gateway validates the command against the full schema anyway).
 */

/** A JSON Schema, as far as the form reads it. */
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  [keyword: string]: unknown;
}

/** The scalar types a list or a number field holds. */
export type ScalarType = 'string' | 'number' | 'integer' | 'boolean';

interface FieldBase {
  /** Key of the field's value in `FormValues`: the property path joined with `.`. */
  key: string;
  /** The property name. */
  name: string;
  label: string;
  description?: string;
  required: boolean;
  /** The schema's `default`, if any. */
  default?: unknown;
}

/** One input of the form. */
export type Field =
  | (FieldBase & { kind: 'text'; minLength?: number; maxLength?: number })
  | (FieldBase & { kind: 'number'; integer: boolean; minimum?: number; maximum?: number })
  | (FieldBase & { kind: 'boolean' })
  | (FieldBase & { kind: 'enum'; options: unknown[] })
  | (FieldBase & { kind: 'object'; fields: Field[] })
  | (FieldBase & { kind: 'list'; itemType: ScalarType })
  | (FieldBase & { kind: 'json' });

/** What the operator typed, by field key: text for every input, a boolean for checkboxes. Enum values are the option's JSON. */
export type FormValues = Record<string, string | boolean>;

/** The outcome of `formData`: the command's data, or a message per wrong field key. */
export type FormResult = { ok: true; data: Record<string, unknown> } | { ok: false; errors: Record<string, string> };

/** The fields of an object schema (a schema of another type has none: the caller falls back to raw JSON). */
export function formFields(schema: JsonSchema, prefix = ''): Field[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => fieldOf(name, property, required.has(name), prefix));
}

/** Each field's starting value: the schema's `default`, else empty (unchecked for booleans). */
export function initialValues(fields: Field[], values: FormValues = {}): FormValues {
  for (const field of fields) {
    if (field.kind === 'object') initialValues(field.fields, values);
    else values[field.key] = initialValue(field);
  }
  return values;
}

/** The command's data from the typed values; empty optional fields are left out. */
export function formData(fields: Field[], values: FormValues): FormResult {
  const errors: Record<string, string> = {};
  const data = objectOf(fields, values, errors);
  return Object.keys(errors).length === 0 ? { ok: true, data } : { ok: false, errors };
}

function fieldOf(name: string, schema: JsonSchema, required: boolean, prefix: string): Field {
  const base: FieldBase = { key: prefix + name, name, label: schema.title ?? name, required };
  if (schema.description !== undefined) base.description = schema.description;
  if (schema.default !== undefined) base.default = schema.default;
  const type = typeOf(schema);
  if (Array.isArray(schema.enum)) return { ...base, kind: 'enum', options: schema.enum };
  if (type === 'string') return { ...base, kind: 'text', ...pick(schema, ['minLength', 'maxLength']) };
  if (type === 'number' || type === 'integer') return { ...base, kind: 'number', integer: type === 'integer', ...pick(schema, ['minimum', 'maximum']) };
  if (type === 'boolean') return { ...base, kind: 'boolean' };
  if (type === 'object' && schema.properties) return { ...base, kind: 'object', fields: formFields(schema, `${base.key}.`) };
  const itemType = schema.items ? typeOf(schema.items) : undefined;
  if (type === 'array' && isScalar(itemType) && !schema.items?.enum) return { ...base, kind: 'list', itemType };
  return { ...base, kind: 'json' };
}

/** The one type a schema names (`["string", "null"]` reads as `string`). */
function typeOf(schema: JsonSchema): string | undefined {
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
}

function isScalar(type: string | undefined): type is ScalarType {
  return type === 'string' || type === 'number' || type === 'integer' || type === 'boolean';
}

function pick<K extends keyof JsonSchema>(schema: JsonSchema, keys: K[]): Partial<Pick<JsonSchema, K>> {
  const picked: Partial<Pick<JsonSchema, K>> = {};
  for (const key of keys) if (typeof schema[key] === 'number') picked[key] = schema[key];
  return picked;
}

function initialValue(field: Field): string | boolean {
  const value = field.default;
  if (field.kind === 'boolean') return value === true;
  if (value === undefined) return '';
  if (field.kind === 'enum') return JSON.stringify(value);
  if (field.kind === 'list') return Array.isArray(value) ? value.map(String).join('\n') : '';
  if (field.kind === 'json') return JSON.stringify(value, null, 2);
  return String(value);
}

function objectOf(fields: Field[], values: FormValues, errors: Record<string, string>): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const field of fields) {
    const value = field.kind === 'object' ? nestedOf(field, values, errors) : valueOf(field, values[field.key], errors);
    if (value !== undefined) data[field.name] = value;
  }
  return data;
}

/** A nested object: left out when optional and nothing in it was filled in. */
function nestedOf(field: Extract<Field, { kind: 'object' }>, values: FormValues, errors: Record<string, string>): Record<string, unknown> | undefined {
  const data = objectOf(field.fields, values, errors);
  return Object.keys(data).length === 0 && !field.required ? undefined : data;
}

function valueOf(field: Field, raw: string | boolean | undefined, errors: Record<string, string>): unknown {
  if (field.kind === 'boolean') return raw === true;
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (text === '') {
    if (field.required) errors[field.key] = `${field.label} is required`;
    return undefined;
  }
  const parsed = parse(field, field.kind === 'text' ? String(raw) : text);
  if ('error' in parsed) errors[field.key] = parsed.error;
  return 'value' in parsed ? parsed.value : undefined;
}

type Parsed = { value: unknown } | { error: string };

function parse(field: Field, text: string): Parsed {
  switch (field.kind) {
    case 'text':
      if (field.minLength !== undefined && text.length < field.minLength) return { error: `${field.label} needs at least ${field.minLength} characters` };
      if (field.maxLength !== undefined && text.length > field.maxLength) return { error: `${field.label} takes at most ${field.maxLength} characters` };
      return { value: text };
    case 'number':
      return numberOf(field, text);
    case 'enum':
      return { value: JSON.parse(text) };
    case 'list':
      return listOf(field, text);
    default:
      return jsonOf(field.label, text);
  }
}

function numberOf(field: Extract<Field, { kind: 'number' }>, text: string): Parsed {
  const value = Number(text);
  if (!Number.isFinite(value)) return { error: `${field.label} must be a number` };
  if (field.integer && !Number.isInteger(value)) return { error: `${field.label} must be a whole number` };
  if (field.minimum !== undefined && value < field.minimum) return { error: `${field.label} must be at least ${field.minimum}` };
  if (field.maximum !== undefined && value > field.maximum) return { error: `${field.label} must be at most ${field.maximum}` };
  return { value };
}

function listOf(field: Extract<Field, { kind: 'list' }>, text: string): Parsed {
  const items: unknown[] = [];
  for (const line of text.split('\n').map((l) => l.trim()).filter((l) => l !== '')) {
    const item = scalarOf(field.itemType, line);
    if (item === undefined) return { error: `${field.label}: "${line}" is not ${article(field.itemType)}` };
    items.push(item);
  }
  return { value: items };
}

function scalarOf(type: ScalarType, text: string): unknown {
  if (type === 'string') return text;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : undefined;
  const value = Number(text);
  return Number.isFinite(value) && (type === 'number' || Number.isInteger(value)) ? value : undefined;
}

function article(type: ScalarType): string {
  return type === 'integer' ? 'an integer' : `a ${type}`;
}

function jsonOf(label: string, text: string): Parsed {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: `${label} is not valid JSON` };
  }
}
