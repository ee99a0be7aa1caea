import { describe, expect, it } from 'vitest';
import { formData, formFields, initialValues, type JsonSchema } from '../../console/src/schema-form.ts';

const order: JsonSchema = {
  type: 'object',
  required: ['sku', 'qty', 'address'],
  properties: {
    sku: { type: 'string', minLength: 1, description: 'Stock keeping unit' },
    qty: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
    price: { type: 'number', minimum: 0 },
    gift: { type: 'boolean', default: true },
    priority: { enum: ['low', 'high', 3], default: 'low' },
    tags: { type: 'array', items: { type: 'string' } },
    sizes: { type: 'array', items: { type: 'integer' }, default: [38, 40] },
    address: { type: 'object', required: ['city'], properties: { city: { type: 'string' }, zip: { type: ['string', 'null'] } } },
    note: { type: 'object', properties: { text: { type: 'string' } } },
    lines: { type: 'array', items: { type: 'object' } },
  },
};

describe('schema-form: a command schema to a form', () => {
  it('maps each property to the input of its type, with constraints, required flags and nesting', () => {
    const fields = formFields(order);
    expect(fields.map((f) => [f.key, f.kind, f.required])).toEqual([
      ['sku', 'text', true],
      ['qty', 'number', true],
      ['price', 'number', false],
      ['gift', 'boolean', false],
      ['priority', 'enum', false],
      ['tags', 'list', false],
      ['sizes', 'list', false],
      ['address', 'object', true],
      ['note', 'object', false],
      ['lines', 'json', false],
    ]);
    expect(fields[0]).toMatchObject({ minLength: 1, description: 'Stock keeping unit' });
    expect(fields[1]).toMatchObject({ integer: true, minimum: 1, maximum: 10 });
    expect(fields[2]).toMatchObject({ integer: false, minimum: 0 });
    expect(fields[4]).toMatchObject({ options: ['low', 'high', 3] });
    expect(fields[5]).toMatchObject({ itemType: 'string' });
    const address = fields[7];
    expect(address.kind === 'object' && address.fields.map((f) => [f.key, f.kind, f.required])).toEqual([
      ['address.city', 'text', true],
      ['address.zip', 'text', false],
    ]);
  });

  it('starts every field at its default, or empty', () => {
    expect(initialValues(formFields(order))).toEqual({
      sku: '', qty: '1', price: '', gift: true, priority: '"low"', tags: '', sizes: '38\n40', 'address.city': '', 'address.zip': '', 'note.text': '', lines: '',
    });
  });
});

describe('schema-form: what was typed to the command data', () => {
  const fields = formFields(order);
  const filled = { ...initialValues(fields), sku: 'widget', qty: '3', price: '9.5', priority: '3', tags: 'red\n\n blue ', 'address.city': 'Ghent', lines: '[{"sku":"a"}]' };

  it('converts numbers, booleans, enum values, lists, nested objects and JSON, leaving empty optional fields out', () => {
    expect(formData(fields, filled)).toEqual({
      ok: true,
      data: { sku: 'widget', qty: 3, price: 9.5, gift: true, priority: 3, tags: ['red', 'blue'], sizes: [38, 40], address: { city: 'Ghent' }, lines: [{ sku: 'a' }] },
    });
  });

  it('names every missing required field, nested ones included', () => {
    expect(formData(fields, initialValues(fields))).toEqual({ ok: false, errors: { sku: 'sku is required', 'address.city': 'city is required' } });
  });

  it('refuses numbers outside minimum and maximum, fractions for integers, bad list items and bad JSON', () => {
    const result = formData(fields, { ...filled, qty: '11', price: '-1', sizes: '38\n40.5', lines: '[' });
    expect(result).toEqual({
      ok: false,
      errors: { qty: 'qty must be at most 10', price: 'price must be at least 0', sizes: 'sizes: "40.5" is not an integer', lines: 'lines is not valid JSON' },
    });
    expect(formData(fields, { ...filled, qty: '0' })).toMatchObject({ errors: { qty: 'qty must be at least 1' } });
    expect(formData(fields, { ...filled, qty: '2.5' })).toMatchObject({ errors: { qty: 'qty must be a whole number' } });
    expect(formData(fields, { ...filled, qty: 'many' })).toMatchObject({ errors: { qty: 'qty must be a number' } });
  });

  it('checks string lengths and keeps a string as typed (spaces included)', () => {
    const schema: JsonSchema = { type: 'object', properties: { code: { type: 'string', minLength: 2, maxLength: 3 } } };
    const short = formFields(schema);
    expect(formData(short, { code: 'x' })).toEqual({ ok: false, errors: { code: 'code needs at least 2 characters' } });
    expect(formData(short, { code: 'abcd' })).toEqual({ ok: false, errors: { code: 'code takes at most 3 characters' } });
    expect(formData(short, { code: ' ab' })).toEqual({ ok: true, data: { code: ' ab' } });
  });

  it('sends an unchecked boolean as false and a required nested object even when empty of optional fields', () => {
    const schema: JsonSchema = { type: 'object', required: ['options'], properties: { urgent: { type: 'boolean' }, options: { type: 'object', properties: { note: { type: 'string' } } } } };
    const form = formFields(schema);
    expect(formData(form, initialValues(form))).toEqual({ ok: true, data: { urgent: false, options: {} } });
  });
});
