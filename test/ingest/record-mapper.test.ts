import { v5 as uuidv5, validate, version } from 'uuid';
import { describe, expect, it } from 'vitest';
import type { RecordsConfig } from '../../src/config/types.ts';
import { RECORD_EVENT_NAMESPACE, recordEventId } from '../../src/ingest/record-id.ts';
import { compileRecordMapper, type RecordMapperOptions } from '../../src/ingest/record-mapper.ts';
import { MappingError } from '../../src/mapping/jsonata.ts';

const records: RecordsConfig = {
  path: '/orders',
  intervalMs: 1000,
  types: ['OrderCreatedV1', 'OrderShippedV1'],
  cursor: { param: 'updatedSince', field: 'updatedAt' },
  items: 'items',
  event: {
    type: 'Order{$pascal(status)}V1',
    id: '{id}:{updatedAt}',
    time: 'updatedAt',
    correlation: 'requestId',
    data: "{ 'orderId': id, 'status': status, 'total': total }",
  },
};

const record = { id: 'o-1', status: 'created', total: 12.5, updatedAt: '2024-05-01T10:00:00+02:00', requestId: 'req-9' };

function mapper(overrides: Partial<RecordMapperOptions> = {}, event: Partial<RecordsConfig['event']> = {}) {
  return compileRecordMapper({
    backendId: 'orders',
    source: 'urn:acme:orders',
    publicUrl: 'https://gw.example.com/',
    records: { ...records, event: { ...records.event, ...event } },
    now: () => Date.parse('2030-01-01T00:00:00Z'),
    ...overrides,
  });
}

describe('record event ids', () => {
  it('are UUIDv5 of backend, path and id template result in the project namespace', () => {
    const id = recordEventId('orders', '/orders', 'o-1:2024');
    expect(validate(id) && version(id)).toBe(5);
    expect(id).toBe(uuidv5('orders\n/orders\no-1:2024', RECORD_EVENT_NAMESPACE));
    expect(recordEventId('orders', '/orders', 'o-1:2024')).toBe(id);
  });

  it('differ between backends and between record paths', () => {
    const id = recordEventId('orders', '/orders', 'x');
    expect(recordEventId('shop', '/orders', 'x')).not.toBe(id);
    expect(recordEventId('orders', '/orders/archive', 'x')).not.toBe(id);
    expect(recordEventId('orders', '/orders', 'y')).not.toBe(id);
  });
});

describe('compileRecordMapper', () => {
  it('maps a record with templates, $pascal and expressions', async () => {
    const event = await mapper().mapRecord(record);
    expect(event).toEqual({
      specversion: '1.0',
      id: recordEventId('orders', '/orders', 'o-1:2024-05-01T10:00:00+02:00'),
      source: 'urn:acme:orders',
      type: 'OrderCreatedV1',
      datacontenttype: 'application/json',
      time: '2024-05-01T08:00:00.000Z',
      correlationid: 'req-9',
      data: { orderId: 'o-1', status: 'created', total: 12.5 },
    });
  });

  it('gives the same id for the same record and a different one for another backend', async () => {
    const first = await mapper().mapRecord(record);
    const again = await mapper().mapRecord({ ...record });
    const other = await mapper({ backendId: 'shop' }).mapRecord(record);
    expect(again.id).toBe(first.id);
    expect(other.id).not.toBe(first.id);
  });

  it('sets dataschema under the public URL when the records are typed', async () => {
    const typed = mapper({ records: { ...records, schema: { type: 'object' } } });
    const event = await typed.mapRecord({ ...record, status: 'in_transit' });
    expect(event.type).toBe('OrderInTransitV1');
    expect(event.dataschema).toBe('https://gw.example.com/events/order-in-transit/1');
  });

  it('renders a source template and defaults time to now, data to the record', async () => {
    const plain = mapper({}, { source: 'urn:acme:orders:{id}', time: undefined, data: undefined, correlation: undefined });
    const event = await plain.mapRecord(record);
    expect(event.source).toBe('urn:acme:orders:o-1');
    expect(event.time).toBe('2030-01-01T00:00:00.000Z');
    expect(event.data).toEqual(record);
    expect(event).not.toHaveProperty('correlationid');
  });

  it('reads epoch seconds and milliseconds as times', async () => {
    const seconds = await mapper().mapRecord({ ...record, updatedAt: 1714550400 });
    const millis = await mapper().mapRecord({ ...record, updatedAt: 1714550400000 });
    expect(seconds.time).toBe('2024-05-01T08:00:00.000Z');
    expect(millis.time).toBe('2024-05-01T08:00:00.000Z');
  });

  it('omits an empty or non-string correlation', async () => {
    expect(await mapper().mapRecord({ ...record, requestId: '' })).not.toHaveProperty('correlationid');
    expect(await mapper().mapRecord({ ...record, requestId: 42 })).not.toHaveProperty('correlationid');
  });

  it.each([
    ['a type that is not PascalCase', {}, { type: 'order-{status}' }, record],
    ['a missing id placeholder', {}, {}, { ...record, updatedAt: undefined, id: undefined }],
    ['a missing type placeholder', {}, {}, { ...record, status: undefined }],
    ['data that is not an object', {}, { data: 'total' }, record],
    ['a time that is not a date', {}, {}, { ...record, updatedAt: 'soon' }],
    ['a record that is not an object', {}, { data: undefined }, 'just text'],
  ])('fails with MappingError on %s', async (_name, options, event, input) => {
    await expect(mapper(options, event).mapRecord(input)).rejects.toBeInstanceOf(MappingError);
  });

  it('rejects a field that does not compile', () => {
    expect(() => mapper({}, { data: '{ broken' })).toThrow(MappingError);
    expect(() => mapper({}, { type: 'Order{' })).toThrow(MappingError);
  });

  it('selects items with the expression, wrapping a single record, and the body by default', async () => {
    expect(await mapper().items({ items: [record, record] })).toHaveLength(2);
    expect(await mapper().items({ items: [record] })).toEqual([record]);
    expect(await mapper().items({})).toEqual([]);
    const filtered = mapper({ records: { ...records, items: "items[status='created']" } });
    expect(await filtered.items({ items: [record, { ...record, status: 'shipped' }] })).toEqual([record]);
    const bodyIsList = mapper({ records: { ...records, items: undefined } });
    expect(await bodyIsList.items([record])).toEqual([record]);
    await expect(mapper().items({ items: 'nope' })).rejects.toBeInstanceOf(MappingError);
  });
});
