/**
 * Generated inputs for every transport of the gateway (fast-check arbitraries), and how each is
 * sent and judged. A case resolves with a finding (what broke a property) or undefined. Properties:
 * no 5xx (no gRPC INTERNAL/UNKNOWN, no JSON-RPC internal error), every refusal carries the error
 * body (or the transport's equivalent), no request hangs past its timeout.
 */
import { Readable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import fc from 'fast-check';
import { request } from 'undici';
import { PROTO_DIR } from '../../src/bridges/grpc/grpc-bridge.ts';
import { BODY_LIMIT, KEYS, type FuzzTarget } from './target.ts';

/** One generated input: its transport, a printable description, and how to send and judge it. */
export interface FuzzCase {
  transport: string;
  describe: string;
  run(target: FuzzTarget, clients: Clients): Promise<string | undefined>;
}

/** gRPC clients, made once per run. */
export interface Clients {
  events: grpc.Client & Record<string, any>;
  /** Sends raw bytes as a SubmitCommand request (corrupted protobuf). */
  raw(bytes: Buffer, md: grpc.Metadata): Promise<grpc.ServiceError | null>;
  close(): void;
}

/** No request may take longer than this (streams are read for a moment, then closed). */
export const CASE_TIMEOUT_MS = 10_000;

export function makeClients(port: number): Clients {
  const definition = protoLoader.loadSync(['gateway.proto'], { includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const Service = (grpc.loadPackageDefinition(definition) as any).proto.gateway.v1.EventGateway;
  const address = `127.0.0.1:${port}`;
  const events = new Service(address, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 8 * 1024 * 1024 });
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  return {
    events,
    raw: (bytes, md) =>
      new Promise((resolve) => {
        raw.makeUnaryRequest('/proto.gateway.v1.EventGateway/SubmitCommand', (b: Buffer) => b, (b: Buffer) => b, bytes, md, { deadline: Date.now() + CASE_TIMEOUT_MS }, (err) => resolve(err));
      }),
    close: () => {
      events.close();
      raw.close();
    },
  };
}

// ---------------------------------------------------------------- building blocks

const key = fc.constantFrom<string | undefined>(KEYS.writer, KEYS.writer, KEYS.reader, 'wrong-key', undefined);
const hostileText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('..', '.', '', '%2e%2e', '%2F', '%00', '\u0000', '../../etc/passwd', '%ff%fe', 'a'.repeat(3000), '🙂', '${jndi:x}', '<script>', '\\..\\'),
);
const jsonValue = fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 4 }), fc.constant(null));
const deep = fc.integer({ min: 20, max: 2000 }).map((n) => '['.repeat(n) + ']'.repeat(n));

const validEnvelope = fc.record({
  specversion: fc.constantFrom('1.0', '1.0', '0.3', 1 as unknown as string),
  // Lone surrogates are valid JSON and not Unicode (a URL cannot carry them; a JSON body can).
  id: fc.oneof(fc.uuid(), hostileText, fc.constantFrom('\ud800', 'a\udfffb')),
  source: fc.constantFrom('urn:fuzz', 'https://x.example/', '', 'urn:\ud800'),
  correlationid: fc.oneof(fc.uuid(), fc.constantFrom('\udc00', 42 as unknown as string)),
  type: fc.constantFrom('PlaceOrder', 'CancelOrder', 'AuthorizePayment', 'Nope', ''),
  datacontenttype: fc.constantFrom('application/json', 'text/plain', undefined as unknown as string),
  dataschema: fc.constantFrom('place-order/1.0', 'cancel-order/1.0', 'authorize-payment/1.0', 'x/9', ''),
  data: fc.oneof(
    fc.record({ sku: hostileText, qty: fc.oneof(fc.integer(), fc.double(), fc.string()) }),
    fc.record({ tenant: hostileText, orderId: hostileText }),
    fc.record({ orderId: hostileText, amount: fc.oneof(fc.integer(), fc.double()), currency: fc.constantFrom('EUR', 'XXX', '') }),
    jsonValue,
  ),
}, { requiredKeys: [] });

/** A body: JSON text of something, broken JSON, deep nesting, binary, or over the limit. */
const bodyText = fc.oneof(
  validEnvelope.map((e) => JSON.stringify(e)),
  jsonValue.map((v) => JSON.stringify(v) ?? ''),
  fc.string({ maxLength: 200 }),
  deep,
  fc.constantFrom('{', '{"a":', '[1,2', '"\\ud800"', '\u0000\u0001', '', ' ', 'null', '1e999999'),
  fc.integer({ min: BODY_LIMIT - 10, max: BODY_LIMIT * 3 }).map((n) => JSON.stringify({ pad: 'x'.repeat(n) })),
);

type Delivery = 'length' | 'chunked' | 'slow';
const delivery = fc.constantFrom<Delivery>('length', 'length', 'chunked', 'slow');
const contentType = fc.constantFrom<string | undefined>('application/json', 'application/json', 'text/plain', 'application/cloudevents+json', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', '%%%', undefined);

const GATEWAY_PATHS = [
  '/commands', '/commands/place-order/1.0', '/queries', '/queries/list-orders', '/queries/order', '/queries/list-orders/1.0', '/events',
  '/events/order-placed/1', '/subscriptions', '/subscriptions/x', '/services', '/services/orders', '/services/payments',
  '/services/payments/commands', '/services/orders/commands', '/services/payments/.well-known/proto', '/services/payments/events',
  '/services/orders/pause', '/.well-known/proto', '/.well-known/agent-card.json', '/schemas/envelope.json', '/spec/commands', '/status',
  '/metrics', '/healthz', '/readyz', '/agents', '/proto/gateway.proto', '/console/', '/nope',
];
const path = fc.oneof(
  fc.constantFrom(...GATEWAY_PATHS),
  fc.tuple(fc.constantFrom(...GATEWAY_PATHS), hostileText).map(([p, extra]) => `${p}/${encodeURIComponent(extra)}`),
  fc.tuple(fc.constantFrom(...GATEWAY_PATHS), fc.constantFrom('/..', '/%2e%2e/', '//', '/./x', '%00', '/%2f..', '?', '#', ';x')).map(([p, s]) => p + s),
);
const queryString = fc.array(fc.tuple(fc.constantFrom('limit', 'after', 'type', 'source', 'correlationId', 'from', 'to', 'status', 'tenant', 'orderId', 'api_key', 'x'), hostileText), { maxLength: 6 })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`));

// ---------------------------------------------------------------- HTTP

interface HttpInput {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  delivery: Delivery;
}

async function* chunks(text: string, slow: boolean): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text);
  const size = slow ? 512 : 4096;
  for (let i = 0; i < bytes.length; i += size) {
    if (slow) await new Promise((resolve) => setTimeout(resolve, 2));
    yield bytes.subarray(i, i + size);
  }
}

/** Sends one HTTP request; judges status and body. `own`: the gateway answers it itself (not a pass-through of the backend's answer). */
/**
 * An expected outcome, not a gateway fault: the pass-through backend (the payments example, a Node
 * server) answers some paths early and closes with the upload unread, so its TCP stack resets the
 * connection (RFC 9112 §9.6) and, when the reset overtakes the answer, the answer is lost before
 * the gateway reads it. There is nothing to forward: 503 BACKEND_UNAVAILABLE with
 * `details.reason: connection-reset` is the right answer (test/http/passthrough-early-answer.test.ts
 * makes a backend do it on purpose). Accepted only in that exact shape: pass-through, streamed body.
 */
const BACKEND_RESET_DURING_UPLOAD = (input: HttpInput, status: number, text: string): boolean =>
  status === 503 && input.delivery !== 'length' && input.body !== undefined && /"reason":"connection-reset"/.test(text);

async function sendHttp(target: FuzzTarget, input: HttpInput, own: (status: number) => boolean, expected?: typeof BACKEND_RESET_DURING_UPLOAD): Promise<string | undefined> {
  const body = input.body === undefined ? undefined : input.delivery === 'length' ? input.body : Readable.from(chunks(input.body, input.delivery === 'slow'));
  const abort = AbortSignal.timeout(CASE_TIMEOUT_MS);
  let res;
  try {
    res = await request(new URL(input.path, target.url).href, { method: input.method as 'GET', headers: input.headers, body, signal: abort, headersTimeout: CASE_TIMEOUT_MS, bodyTimeout: CASE_TIMEOUT_MS });
  } catch (err) {
    const message = (err as Error).message;
    if (abort.aborted) return `no answer within ${CASE_TIMEOUT_MS} ms`;
    // The gateway may close the connection after a 413 while a chunked upload is still being written.
    if (/other side closed|socket|ECONNRESET|EPIPE|premature close/i.test(message) && input.body !== undefined && Buffer.byteLength(input.body) > BODY_LIMIT) return undefined;
    if (/invalid|header|character/i.test(message)) return undefined; // the client refused to send it
    return `request failed: ${message}`;
  }
  const stream = (res.headers['content-type'] ?? '').toString().startsWith('text/event-stream');
  let text = '';
  if (stream) res.body.destroy();
  else {
    try {
      text = await res.body.text();
    } catch (err) {
      if (abort.aborted) return `the body did not end within ${CASE_TIMEOUT_MS} ms`;
      return `reading the answer failed: ${(err as Error).message}`;
    }
  }
  if (res.statusCode >= 500 && !expected?.(input, res.statusCode, text)) return `status ${res.statusCode}: ${text.slice(0, 300)}`;
  if (res.statusCode >= 400 && res.statusCode < 500 && input.method !== 'HEAD' && own(res.statusCode)) {
    try {
      const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
      if (typeof parsed.error?.code !== 'string' || typeof parsed.error.message !== 'string') return `refusal ${res.statusCode} without the error body: ${text.slice(0, 200)}`;
    } catch {
      return `refusal ${res.statusCode} is not JSON: ${text.slice(0, 200)}`;
    }
  }
  return undefined;
}

/** W3C trace context a caller may send: valid, zeroed, wrong version, hostile text, oversized; or none. */
const traceContext = fc.option(
  fc.record({
    traceparent: fc.oneof(
      fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
      fc.constant('00-00000000000000000000000000000000-0000000000000000-01'),
      fc.constant('ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
      fc.tuple(fc.stringMatching(/^[0-9a-f]{32}$/), fc.stringMatching(/^[0-9a-f]{16}$/), fc.constantFrom('00', '01', 'ff')).map(([t, s, f]) => `00-${t}-${s}-${f}`),
      hostileText,
      fc.constant('x'.repeat(8_000)),
    ),
    tracestate: fc.oneof(fc.constant(''), hostileText, fc.constant('a=b,'.repeat(2_000)), fc.constant('vendor=value')),
  }),
  { freq: 2 },
).map((headers) => (headers === null ? {} : Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ''))));

function headersOf(apiKey: string | undefined, type: string | undefined, extra: Record<string, string> = {}): Record<string, string> {
  return { ...(apiKey && { 'x-api-key': apiKey }), ...(type && { 'content-type': type }), ...extra };
}

const httpCase: fc.Arbitrary<FuzzCase> = fc.record({
  method: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
  path,
  query: queryString,
  key,
  type: contentType,
  body: fc.option(bodyText, { freq: 3 }),
  delivery,
  trace: traceContext,
}).map((c) => ({
  transport: 'http',
  describe: `${c.method} ${c.path}${c.query} key=${c.key} type=${c.type} ${c.delivery} trace=${JSON.stringify(c.trace).slice(0, 120)} body=${c.body?.slice(0, 120)}`,
  run: (target) => {
    const passThrough = /^\/services\/payments\/(?!(commands|queries|events|\.well-known\/proto|pause|resume)(\/|$|\?))/.test(c.path);
    const body = c.method === 'GET' || c.method === 'HEAD' || c.body === null ? undefined : c.body;
    return sendHttp(target, { method: c.method, path: c.path + c.query, headers: headersOf(c.key, c.type, c.trace), body, delivery: c.delivery }, (status) => !passThrough || status === 413 || status === 401 || status === 403);
  },
}));

const commandCase: fc.Arbitrary<FuzzCase> = fc.record({ envelope: validEnvelope, key, delivery, service: fc.constantFrom('', '/services/orders', '/services/payments'), trace: traceContext }).map((c) => ({
  transport: 'http-commands',
  describe: `POST ${c.service}/commands ${c.delivery} trace=${JSON.stringify(c.trace).slice(0, 120)} ${JSON.stringify(c.envelope).slice(0, 200)}`,
  run: (target) => sendHttp(target, { method: 'POST', path: `${c.service}/commands`, headers: headersOf(c.key, 'application/json', c.trace), body: JSON.stringify(c.envelope), delivery: c.delivery }, () => true),
}));

const passThroughCase: fc.Arbitrary<FuzzCase> = fc.record({ rest: hostileText, key, body: bodyText, delivery, method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE') }).map((c) => ({
  transport: 'pass-through',
  describe: `${c.method} /services/payments/x/${c.rest.slice(0, 60)} ${c.delivery} ${c.body.length} bytes`,
  run: (target) => sendHttp(target, {
    method: c.method,
    path: `/services/payments/x/${encodeURIComponent(c.rest)}`,
    headers: headersOf(c.key, 'application/json'),
    body: c.method === 'GET' ? undefined : c.body,
    delivery: c.delivery,
  }, (status) => status === 413 || status === 401 || status === 403, BACKEND_RESET_DURING_UPLOAD),
}));

const subscriptionCase: fc.Arbitrary<FuzzCase> = fc.record({
  body: fc.oneof(
    fc.record({ url: fc.constantFrom('http://127.0.0.1:9/hook', 'https://example.invalid/x', 'ftp://x', 'http://user:pw@127.0.0.1/', ''), types: fc.array(hostileText, { maxLength: 3 }), filter: jsonValue }, { requiredKeys: [] }).map((b) => JSON.stringify(b)),
    bodyText,
  ),
  key,
  method: fc.constantFrom('POST', 'GET', 'DELETE'),
  id: hostileText,
}).map((c) => ({
  transport: 'subscriptions',
  describe: `${c.method} /subscriptions ${c.body.slice(0, 160)}`,
  run: (target) => sendHttp(target, {
    method: c.method,
    path: c.method === 'DELETE' ? `/subscriptions/${encodeURIComponent(c.id)}` : '/subscriptions',
    headers: headersOf(c.key, 'application/json'),
    body: c.method === 'POST' ? c.body : undefined,
    delivery: 'length',
  }, () => true),
}));

/**
 * The webhook operations (recover, enable, secret rotation, resend) against a real subscription of
 * the writer: any key (another principal's, read-only, none), any body, any delivery. The
 * subscription is created and deleted around each case so the per-principal cap is never reached.
 */
const webhookOperationCase: fc.Arbitrary<FuzzCase> = fc.record({
  operation: fc.constantFrom('recover', 'enable', 'secret/rotate', 'events/x/resend', 'events/00000000-0000-0000-0000-000000000000/resend'),
  body: fc.oneof(
    fc.record({ since: fc.oneof(hostileText, fc.date({ noInvalidDate: true }).map((d) => d.toISOString())), until: hostileText, recover: jsonValue, secret: fc.oneof(hostileText, fc.constant('whsec_'), fc.constant(`whsec_${'A'.repeat(200)}`)), overlap: hostileText }, { requiredKeys: [] }).map((b) => JSON.stringify(b)),
    bodyText,
  ),
  key,
  delivery,
}).map((c) => ({
  transport: 'webhook-operations',
  describe: `POST /subscriptions/{id}/${c.operation} ${c.delivery} ${c.body.slice(0, 160)}`,
  run: async (target) => {
    const created = await request(new URL('/subscriptions', target.url).href, { method: 'POST', headers: headersOf(KEYS.writer, 'application/json'), body: JSON.stringify({ webhook: { url: 'http://127.0.0.1:9/hook' } }) });
    const answer = (await created.body.json()) as { id?: string };
    if (created.statusCode !== 201 || typeof answer.id !== 'string') return `creating the subscription answered ${created.statusCode}`;
    try {
      return await sendHttp(target, { method: 'POST', path: `/subscriptions/${answer.id}/${c.operation}`, headers: headersOf(c.key, 'application/json'), body: c.body, delivery: c.delivery }, () => true);
    } finally {
      await request(new URL(`/subscriptions/${answer.id}`, target.url).href, { method: 'DELETE', headers: headersOf(KEYS.writer, undefined) }).then((r) => r.body.dump());
    }
  },
}));

const sseCase: fc.Arbitrary<FuzzCase> = fc.record({ query: queryString, lastEventId: fc.option(hostileText), key, service: fc.constantFrom('', '/services/orders', '/services/payments', '/services/nope') }).map((c) => ({
  transport: 'sse',
  describe: `GET ${c.service}/events/stream${c.query} Last-Event-ID=${c.lastEventId}`,
  run: (target) => sendHttp(target, {
    method: 'GET',
    path: `${c.service}/events/stream${c.query}`,
    headers: headersOf(c.key, undefined, { accept: 'text/event-stream', ...(c.lastEventId !== null && /^[\x20-\x7e]*$/.test(c.lastEventId) && { 'last-event-id': c.lastEventId }) }),
    delivery: 'length',
  }, () => true),
}));

// ---------------------------------------------------------------- JSON-RPC (MCP, A2A)

const rpcId = fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null), fc.constant(Number.MAX_SAFE_INTEGER * 1e10), fc.constant('x'.repeat(2000)));
const mcpMethod = fc.constantFrom('initialize', 'tools/list', 'tools/call', 'ping', 'resources/list', 'notifications/initialized', 'nope', '');
const a2aMethod = fc.constantFrom('SendMessage', 'SendStreamingMessage', 'GetTask', 'ListTasks', 'CancelTask', 'SubscribeToTask', 'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard', 'message/send', 'nope');
const toolCall = fc.record({
  name: fc.constantFrom('send_command', 'get_events', 'execute_query', 'get_command_schema', 'sample_event_stream', 'nope'),
  arguments: fc.oneof(jsonValue, fc.record({ schema: hostileText, version: hostileText, data: jsonValue, params: jsonValue, max_seconds: fc.integer({ min: -5, max: 2 }) }, { requiredKeys: [] })),
});
const pushUrl = fc.constantFrom('http://127.0.0.1:9/', 'http://10.0.0.1/', 'https://example.invalid/hook', 'notaurl', '', 'file:///etc/passwd');
const pushToken = fc.oneof(fc.string({ maxLength: 50 }), fc.integer({ min: 7_000, max: 20_000 }).map((n) => 'x'.repeat(n)));
const a2aParams = fc.oneof(
  jsonValue,
  fc.record({
    message: fc.record({ messageId: fc.uuid(), role: fc.constantFrom('ROLE_USER', 'user', 1 as unknown as string), parts: fc.array(fc.oneof(fc.record({ data: jsonValue }), fc.record({ text: hostileText })), { maxLength: 2 }) }, { requiredKeys: [] }),
    id: hostileText,
    taskId: hostileText,
    pushNotificationConfig: fc.record({ url: fc.constantFrom('http://127.0.0.1:9/', 'http://10.0.0.1/', 'notaurl'), token: fc.string({ maxLength: 50 }) }),
    pageSize: fc.integer({ min: -5, max: 1000 }),
  }, { requiredKeys: [] }),
  // A2A 1.0 push configs (CreateTaskPushNotificationConfig's flat params, SendMessage's
  // configuration): hostile URLs, tokens around the 8 KiB bound, another task's or no id.
  fc.record({
    taskId: hostileText,
    id: hostileText,
    url: pushUrl,
    token: pushToken,
    authentication: fc.record({ scheme: hostileText, credentials: pushToken }, { requiredKeys: [] }),
  }, { requiredKeys: [] }),
  fc.record({
    message: fc.record({ messageId: fc.uuid(), role: fc.constant('ROLE_USER'), parts: fc.constant([{ text: 'hi' }]) }),
    configuration: fc.record({ taskPushNotificationConfig: fc.record({ id: hostileText, url: pushUrl, token: pushToken }, { requiredKeys: [] }), returnImmediately: fc.boolean() }, { requiredKeys: [] }),
  }),
);

function rpcBodies(method: fc.Arbitrary<string>, params: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  const one = fc.record({ jsonrpc: fc.constantFrom('2.0', '2.0', '1.0'), id: rpcId, method, params }, { requiredKeys: ['method'] });
  return fc.oneof(one.map((m) => JSON.stringify(m)), fc.array(one, { minLength: 0, maxLength: 4 }).map((b) => JSON.stringify(b)), bodyText);
}

/** A JSON-RPC answer (or SSE stream) must not carry an internal error (-32603) or be a 5xx. */
function isJsonRpcResponse(text: string): boolean {
  try {
    return (JSON.parse(text) as { jsonrpc?: unknown }).jsonrpc === '2.0';
  } catch {
    return false;
  }
}

async function sendRpc(target: FuzzTarget, path: string, headers: Record<string, string>, body: string): Promise<string | undefined> {
  const abort = AbortSignal.timeout(CASE_TIMEOUT_MS);
  try {
    const res = await request(new URL(path, target.url).href, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body, signal: abort });
    const streaming = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
    let text = '';
    if (streaming) {
      // Read a moment of the stream, then leave.
      const timer = setTimeout(() => res.body.destroy(), 300);
      try {
        for await (const chunk of res.body) text += chunk;
      } catch {
        // destroyed by us
      }
      clearTimeout(timer);
    } else text = await res.body.text();
    if (res.statusCode >= 500) return `status ${res.statusCode}: ${text.slice(0, 300)}`;
    if (/"code"\s*:\s*-32603/.test(text)) return `JSON-RPC internal error: ${text.slice(0, 300)}`;
    if (res.statusCode >= 400 && res.statusCode !== 404 && !/"error"/.test(text)) return `refusal ${res.statusCode} without an error: ${text.slice(0, 200)}`;
    // Every answer of /a2a, the gateway's refusals (401, 403, 413, 429, 503) included, is a JSON-RPC response object.
    if (path === '/a2a' && !streaming && !isJsonRpcResponse(text)) return `A2A answer ${res.statusCode} that is not a JSON-RPC response: ${text.slice(0, 200)}`;
    return undefined;
  } catch (err) {
    if (abort.aborted) return `no answer within ${CASE_TIMEOUT_MS} ms`;
    return `request failed: ${(err as Error).message}`;
  }
}

const mcpCase: fc.Arbitrary<FuzzCase> = fc.record({
  body: rpcBodies(mcpMethod, fc.oneof(jsonValue, toolCall, fc.record({ protocolVersion: fc.constantFrom('2025-06-18', '1999-01-01', ''), capabilities: jsonValue, clientInfo: jsonValue }))),
  session: fc.option(hostileText),
  key,
}).map((c) => ({
  transport: 'mcp',
  describe: `POST /mcp session=${c.session} ${c.body.slice(0, 200)}`,
  run: (target) => sendRpc(target, '/mcp', {
    ...(c.key && { 'x-api-key': c.key }),
    ...(c.session !== null && /^[\x21-\x7e]+$/.test(c.session) && { 'mcp-session-id': c.session }),
  }, c.body),
}));

const a2aCase: fc.Arbitrary<FuzzCase> = fc.record({ body: rpcBodies(a2aMethod, a2aParams), key, version: fc.constantFrom('1.0', '0.3', '9') }).map((c) => ({
  transport: 'a2a',
  describe: `POST /a2a ${c.body.slice(0, 200)}`,
  run: (target) => sendRpc(target, '/a2a', { ...(c.key && { 'x-api-key': c.key }), 'a2a-version': c.version }, c.body),
}));

// ---------------------------------------------------------------- gRPC

const BAD_STATUSES = new Set([grpc.status.INTERNAL, grpc.status.UNKNOWN]);

function metadataOf(apiKey: string | undefined): grpc.Metadata {
  const md = new grpc.Metadata();
  if (apiKey) md.set('x-api-key', apiKey);
  return md;
}

function judgeStatus(err: grpc.ServiceError | null): string | undefined {
  if (err && BAD_STATUSES.has(err.code)) return `gRPC ${grpc.status[err.code]}: ${err.details}`;
  if (err && err.code === grpc.status.DEADLINE_EXCEEDED) return `gRPC call hung past ${CASE_TIMEOUT_MS} ms`;
  return undefined;
}

const protoEvent = fc.record({
  id: hostileText,
  source: hostileText,
  spec_version: fc.constantFrom('1.0', '', '0.3'),
  type: fc.constantFrom('PlaceOrder', 'CancelOrder', 'AuthorizePayment', 'X'),
  attributes: fc.dictionary(fc.constantFrom('dataschema', 'datacontenttype', 'time', 'x'), fc.oneof(
    fc.record({ ce_string: hostileText }), fc.record({ ce_integer: fc.integer({ min: -2147483648, max: 2147483647 }) }), fc.record({ ce_boolean: fc.boolean() }),
  ), { maxKeys: 4 }),
  text_data: fc.option(bodyText, { nil: undefined }),
});

const grpcCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  fc.record({ event: protoEvent, key }).map((c) => ({
    transport: 'grpc',
    describe: `SubmitCommand ${JSON.stringify(c.event).slice(0, 200)}`,
    run: (_t: FuzzTarget, clients: Clients) => new Promise<string | undefined>((resolve) => {
      clients.events.SubmitCommand(c.event, metadataOf(c.key), { deadline: Date.now() + CASE_TIMEOUT_MS }, (err: grpc.ServiceError | null) => resolve(judgeStatus(err)));
    }),
  })),
  fc.record({ bytes: fc.uint8Array({ maxLength: 400 }), key }).map((c) => ({
    transport: 'grpc-corrupt',
    describe: `SubmitCommand raw ${Buffer.from(c.bytes).toString('hex').slice(0, 120)}`,
    run: async (_t: FuzzTarget, clients: Clients) => judgeStatus(await clients.raw(Buffer.from(c.bytes), metadataOf(c.key))),
  })),
  fc.record({ request: fc.record({ type: hostileText, source: hostileText, correlation_id: hostileText, from: hostileText, to: hostileText, limit: fc.integer({ min: -10, max: 5000 }), after: hostileText }, { requiredKeys: [] }), key }).map((c) => ({
    transport: 'grpc',
    describe: `ListEvents ${JSON.stringify(c.request).slice(0, 200)}`,
    run: (_t: FuzzTarget, clients: Clients) => new Promise<string | undefined>((resolve) => {
      clients.events.ListEvents(c.request, metadataOf(c.key), { deadline: Date.now() + CASE_TIMEOUT_MS }, (err: grpc.ServiceError | null) => resolve(judgeStatus(err)));
    }),
  })),
  fc.record({ request: fc.record({ type: hostileText, source: hostileText, correlation_id: hostileText, last_event_id: hostileText }, { requiredKeys: [] }), key }).map((c) => ({
    transport: 'grpc-subscribe',
    describe: `Subscribe ${JSON.stringify(c.request).slice(0, 200)}`,
    run: (_t: FuzzTarget, clients: Clients) => new Promise<string | undefined>((resolve) => {
      const call = clients.events.Subscribe(c.request, metadataOf(c.key)) as grpc.ClientReadableStream<unknown>;
      const timer = setTimeout(() => call.cancel(), 300);
      call.on('data', () => undefined);
      call.on('error', (err: grpc.ServiceError) => {
        clearTimeout(timer);
        resolve(err.code === grpc.status.CANCELLED ? undefined : judgeStatus(err));
      });
      call.on('end', () => {
        clearTimeout(timer);
        resolve(undefined);
      });
    }),
  })),
);

/** Every transport, weighted so each gets a share of any run. */
export const anyCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  { arbitrary: httpCase, weight: 4 },
  { arbitrary: commandCase, weight: 2 },
  { arbitrary: passThroughCase, weight: 2 },
  { arbitrary: subscriptionCase, weight: 1 },
  { arbitrary: webhookOperationCase, weight: 1 },
  { arbitrary: sseCase, weight: 1 },
  { arbitrary: mcpCase, weight: 2 },
  { arbitrary: a2aCase, weight: 2 },
  { arbitrary: grpcCase, weight: 3 },
);
