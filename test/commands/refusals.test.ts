import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/app.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { describeProblems } from '../../src/catalogue/schema-compiler.ts';
import { authorizePayment, exampleBackends, FAST_DISPATCH, ordersBackend, placeOrder, post, protoBackend } from './support.ts';

let gw: Gateway;
const writer = { 'x-api-key': 'write-key' };

beforeAll(async () => {
  const { orders, payments } = await exampleBackends();
  gw = await startTestGateway(
    gatewayYaml(`${FAST_DISPATCH}
server: { host: 127.0.0.1, port: 0, bodyLimit: 2kb, maxJsonDepth: 8 }
auth:
  type: apiKey
  keys:
    - { id: writer, key: write-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }
backends:
${ordersBackend(orders.url)}${protoBackend(payments.url)}`).replace('server: { host: 127.0.0.1, port: 0 }\n', ''),
  );
});
afterAll(closeAll);

/** Expects the protocol's error body with `code` and `status`; returns the error object. */
function expectError(res: { status: number; body: any; headers: Headers }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/json');
  expect(res.body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
  return res.body.error;
}

describe('POST /commands: the order of checks', () => {
  it('401 without credentials, before anything about the body', async () => {
    expectError(await post(`${gw.url}commands`, '{not json'), 401, 'UNAUTHENTICATED');
  });

  it('403 for a key without the write scope', async () => {
    expectError(await post(`${gw.url}commands`, placeOrder(), { 'x-api-key': 'read-key' }), 403, 'FORBIDDEN');
  });

  it('413 PAYLOAD_TOO_LARGE for a body over bodyLimit, even when it is not JSON', async () => {
    expectError(await post(`${gw.url}commands`, 'x'.repeat(3000), writer), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('400 INVALID_JSON for a body that does not parse or nests too deep', async () => {
    expectError(await post(`${gw.url}commands`, '{"specversion":', writer), 400, 'INVALID_JSON');
    const deep = placeOrder({ sku: 'a', qty: 1, x: [[[[[[[[[[1]]]]]]]]]] });
    expectError(await post(`${gw.url}commands`, deep, writer), 400, 'INVALID_JSON');
  });

  const broken: Array<[string, Record<string, unknown>]> = [
    ['specversion missing', { specversion: undefined }],
    ['specversion not 1.0', { specversion: '0.3' }],
    ['id missing', { id: undefined }],
    ['id empty', { id: '' }],
    ['id not a string', { id: 42 }],
    ['id with a lone surrogate (not Unicode; stored as U+FFFD it would be another id)', { id: 'cmd-\ud800' }],
    ['source with a lone surrogate', { source: 'urn:\udc00' }],
    ['correlationid with a lone surrogate', { correlationid: 'order-\ud83d' }],
    ['source missing', { source: undefined }],
    ['type missing', { type: undefined }],
    ['type not PascalCase', { type: 'place-order' }],
    ['datacontenttype missing', { datacontenttype: undefined }],
    ['datacontenttype not JSON', { datacontenttype: 'text/plain' }],
    ['dataschema missing', { dataschema: undefined }],
    ['time not ISO 8601', { time: 'yesterday' }],
    ['data missing', { data: undefined }],
    ['data an array', { data: [1] }],
    ['data a string', { data: 'x' }],
  ];
  for (const [label, overrides] of broken) {
    it(`400 INVALID_ENVELOPE: ${label}`, async () => {
      expectError(await post(`${gw.url}commands`, placeOrder(undefined, overrides), writer), 400, 'INVALID_ENVELOPE');
    });
  }

  it('400 INVALID_ENVELOPE for a body that is not an object', async () => {
    expectError(await post(`${gw.url}commands`, [placeOrder()], writer), 400, 'INVALID_ENVELOPE');
  });

  it('an envelope both malformed and of an unknown type is INVALID_ENVELOPE', async () => {
    const error = expectError(await post(`${gw.url}commands`, placeOrder(undefined, { type: 'LaunchRocket', time: 'yesterday' }), writer), 400, 'INVALID_ENVELOPE');
    expect(error.details).toEqual({ attribute: 'time' });
  });

  it('422 UNKNOWN_COMMAND_TYPE before the dataschema and data are looked at', async () => {
    const command = placeOrder({ nonsense: true }, { type: 'LaunchRocket', dataschema: 'https://evil.example/x.json' });
    const error = expectError(await post(`${gw.url}commands`, command, writer), 422, 'UNKNOWN_COMMAND_TYPE');
    expect(error.details).toEqual({ type: 'LaunchRocket' });
  });

  it('400 DATASCHEMA_MISMATCH before the data is validated', async () => {
    for (const dataschema of ['authorize-payment/1.0', 'place-order/2.0', `${gw.url}commands/authorize-payment/1.0`, 'https://evil.example/commands/place-order/1.0']) {
      const error = expectError(await post(`${gw.url}commands`, placeOrder({ qty: 0 }, { dataschema }), writer), 400, 'DATASCHEMA_MISMATCH');
      expect(error.details).toEqual({ expected: `${gw.url}commands/place-order/1.0` });
    }
  });

  it('400 VALIDATION_FAILED with every problem as a JSON Pointer into data', async () => {
    const error = expectError(await post(`${gw.url}commands`, placeOrder({ qty: 0 }), writer), 400, 'VALIDATION_FAILED');
    expect(error.details.errors).toEqual(
      expect.arrayContaining([
        { path: '/sku', message: expect.any(String) },
        { path: '/qty', message: expect.any(String) },
      ]),
    );
    const nested = await post(`${gw.url}commands`, authorizePayment({ orderId: 7, amount: -1 }), writer);
    expect(expectError(nested, 400, 'VALIDATION_FAILED').details.errors.map((e: { path: string }) => e.path).sort()).toEqual(['/amount', '/orderId']);
  });

  it('names each violation in error.message, for clients that show only the message (MCP clients, agents)', async () => {
    const error = expectError(await post(`${gw.url}commands`, placeOrder({ sku: '', qty: 0 }), writer), 400, 'VALIDATION_FAILED');
    expect(error.message).toMatch(/^data is not a valid PlaceOrder: /);
    for (const problem of error.details.errors as Array<{ path: string; message: string }>) {
      expect(error.message).toContain(`${problem.path} ${problem.message}`);
    }
    const long = describeProblems('data is not a valid PlaceOrder', Array.from({ length: 50 }, (_, i) => ({ path: `/field${i}`, message: 'must be a string of a sensible length' })));
    expect(long.length).toBe(500);
    expect(long.endsWith('…')).toBe(true);
  });

  it('accepts both dataschema forms and answers 201 { id }', async () => {
    for (const dataschema of ['place-order/1.0', `${gw.url}commands/place-order/1.0`, `${gw.url}services/orders/commands/place-order/1.0`]) {
      const command = placeOrder(undefined, { dataschema });
      const res = await post(`${gw.url}commands`, command, writer);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: command.id });
    }
  });

  it('counts every outcome in proto_gateway_commands_total, type "unknown" outside the catalogue', async () => {
    const metrics = await (await fetch(`${gw.url}metrics`, { headers: writer })).text();
    expect(metrics).toMatch(/proto_gateway_commands_total\{type="PlaceOrder",outcome="accepted"\} [1-9]/);
    expect(metrics).toMatch(/proto_gateway_commands_total\{type="PlaceOrder",outcome="validation_failed"\} [1-9]/);
    expect(metrics).toMatch(/proto_gateway_commands_total\{type="unknown",outcome="unknown_command_type"\} [1-9]/);
    expect(metrics).toMatch(/proto_gateway_commands_total\{type="unknown",outcome="invalid_envelope"\} [1-9]/);
    expect(metrics).not.toContain('type="LaunchRocket"');
    expect(metrics).toMatch(/proto_gateway_outbox_depth \d+/);
  });
});

describe('POST /services/{id}/commands', () => {
  it('404 SERVICE_NOT_FOUND for an unknown service', async () => {
    expectError(await post(`${gw.url}services/nobody/commands`, placeOrder(), writer), 404, 'SERVICE_NOT_FOUND');
  });

  it('422 COMMAND_NOT_ACCEPTED for a type that service does not accept', async () => {
    const error = expectError(await post(`${gw.url}services/payments/commands`, placeOrder(), writer), 422, 'COMMAND_NOT_ACCEPTED');
    expect(error.details).toEqual({ type: 'PlaceOrder', service: 'payments' });
    expectError(await post(`${gw.url}services/payments/commands`, placeOrder(undefined, { type: 'LaunchRocket' }), writer), 422, 'COMMAND_NOT_ACCEPTED');
  });

  it('still checks the envelope first', async () => {
    expectError(await post(`${gw.url}services/payments/commands`, placeOrder(undefined, { id: undefined }), writer), 400, 'INVALID_ENVELOPE');
  });

  it('accepts a type of that service', async () => {
    const command = authorizePayment();
    const res = await post(`${gw.url}services/payments/commands`, command, writer);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: command.id });
  });

  it('needs the write scope', async () => {
    expectError(await post(`${gw.url}services/payments/commands`, authorizePayment(), { 'x-api-key': 'read-key' }), 403, 'FORBIDDEN');
    expect((await getJson(`${gw.url}services/payments/commands`, { headers: { 'x-api-key': 'read-key' } })).status).toBe(200);
  });
});
