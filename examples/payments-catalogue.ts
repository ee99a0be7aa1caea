/**
 * What the example payments service declares: its discovery manifest (PROTOCOL.md 2.1–2.6), its
 * command, event and query catalogues (PROTOCOL-NOTES.md), and the small documents its capabilities
 * point to. Data only; `payments-service.ts` serves it. Every URL is built from the service's
 * `endpoint` (its `http.endpoint`, ending in `/`), so a gateway in front must rewrite them all.
 */

/** The service key in `PROTO.services`. */
export const serviceName = 'com.example.payments';

/** A command the service accepts. */
export interface CommandEntry {
  /** PascalCase command type (`$pascal(schema)`). */
  type: string;
  schema: string;
  version: string;
  description: string;
  /** JSON Schema of `data` (draft-07 keywords only). */
  jsonSchema: Record<string, unknown>;
  /** Event types its processing can produce. */
  produces: string[];
}

/** An event type the service publishes (all typed: each has a `dataschema`). */
export interface EventEntry {
  type: string;
  schema: string;
  version: string;
  description: string;
  jsonSchema: Record<string, unknown>;
}

/** Amounts above this (in the command's currency) are declined. */
export const authorizationLimit = 10_000;

/** The command catalogue. */
export const commands: CommandEntry[] = [
  {
    type: 'AuthorizePayment',
    schema: 'authorize-payment',
    version: '1.0',
    description: `Authorize a payment for an order; amounts above ${authorizationLimit} are declined`,
    jsonSchema: {
      type: 'object',
      required: ['orderId', 'amount'],
      properties: {
        orderId: { type: 'string' },
        amount: { type: 'number', exclusiveMinimum: 0 },
        currency: { type: 'string', default: 'EUR' },
      },
    },
    produces: ['PaymentAuthorizedV1', 'PaymentDeclinedV1'],
  },
  {
    type: 'RefundPayment',
    schema: 'refund-payment',
    version: '1.0',
    description: 'Refund (part of) an authorized payment',
    jsonSchema: {
      type: 'object',
      required: ['orderId', 'amount'],
      properties: {
        orderId: { type: 'string' },
        amount: { type: 'number', exclusiveMinimum: 0 },
        currency: { type: 'string', default: 'EUR' },
        reason: { type: 'string' },
      },
    },
    produces: ['PaymentRefundedV1'],
  },
];

const paymentData = {
  type: 'object',
  required: ['orderId', 'amount', 'currency'],
  properties: {
    paymentId: { type: 'string' },
    orderId: { type: 'string' },
    amount: { type: 'number' },
    currency: { type: 'string' },
    reason: { type: 'string' },
  },
};

/** The event catalogue. */
export const events: EventEntry[] = [
  { type: 'PaymentAuthorizedV1', schema: 'payment-authorized', version: '1', description: 'A payment was authorized', jsonSchema: paymentData },
  { type: 'PaymentDeclinedV1', schema: 'payment-declined', version: '1', description: 'A payment was declined (see reason)', jsonSchema: paymentData },
  { type: 'PaymentRefundedV1', schema: 'payment-refunded', version: '1', description: 'A payment was refunded', jsonSchema: paymentData },
];

/** The one query, `payment-status`: its descriptor as `GET /queries/payment-status/1.0` serves it. */
export const paymentStatusQuery = {
  schema: 'payment-status',
  version: '1.0',
  description: 'The payment status of an order, from the events seen so far',
  parameters: { type: 'object', required: ['orderId'], properties: { orderId: { type: 'string' } } },
  response: {
    type: 'object',
    required: ['orderId', 'status'],
    properties: { orderId: { type: 'string' }, status: { enum: ['unknown', 'authorized', 'declined', 'refunded'] } },
  },
};

/** The status an event type sets for its order in `payment-status`. */
export const statusByEventType: Record<string, string> = {
  PaymentAuthorizedV1: 'authorized',
  PaymentDeclinedV1: 'declined',
  PaymentRefundedV1: 'refunded',
};

/** Short HTML pages under `docs/{name}`: title and text. */
export const docs: Record<string, [string, string]> = {
  payments: ['Payments service', 'Authorizes and refunds payments of orders. Commands: AuthorizePayment, RefundPayment.'],
  commands: ['Payments: commands', 'POST /commands with a CloudEvents envelope; results arrive as events correlated by the command id.'],
  events: ['Payments: events', 'GET /events (cursor pagination) and GET /events/stream (SSE, Last-Event-ID replay).'],
  refunds: ['Payments: refunds', 'GET /refunds lists refunds (a capability specific to this service).'],
};

/** JSON Schemas under `schemas/{name}`, the `schema` URLs of the capabilities. */
export const capabilitySchemas: Record<string, Record<string, unknown>> = {
  'commands.json': {
    title: 'Command envelope',
    type: 'object',
    required: ['specversion', 'id', 'source', 'type', 'dataschema', 'data'],
    properties: { specversion: { const: '1.0' }, id: { type: 'string' }, source: { type: 'string' }, type: { type: 'string' }, dataschema: { type: 'string' }, data: { type: 'object' } },
  },
  'events.json': {
    title: 'Event list',
    type: 'object',
    required: ['events'],
    properties: { events: { type: 'array', items: { type: 'object' } }, nextCursor: { type: 'string' } },
  },
  'refund.json': {
    title: 'Refund list',
    type: 'object',
    required: ['refunds'],
    properties: { refunds: { type: 'array', items: { type: 'object' } } },
  },
};

/** How a capability is declared: its docs page, its schema file and what else it carries. */
interface CapabilityDeclaration {
  name: string;
  description: string;
  /** Name of its page under `docs/`. */
  page: string;
  /** Name of its JSON Schema under `schemas/`. */
  schemaFile: string;
  endpoints: { method: string; path: string; description?: string }[];
  push?: Record<string, boolean>;
}

/** A capability object (PROTOCOL.md 2.3), with its `spec` and `schema` under `endpoint`. */
function capability(endpoint: string, { name, description, page, schemaFile, ...rest }: CapabilityDeclaration) {
  return { name, version: '1.0.0', description, spec: `${endpoint}docs/${page}`, schema: `${endpoint}schemas/${schemaFile}`, service: serviceName, ...rest };
}

/**
 * The discovery manifest. The `mcp` and `a2a` blocks are declared although this service serves
 * neither, so a gateway in front can show that it drops what it cannot vouch for.
 */
export function manifest(endpoint: string) {
  const service = {
    version: '1.2.0',
    description: 'Payments: authorizes and refunds the payments of orders',
    spec: `${endpoint}docs/payments`,
    http: { endpoint },
    mcp: { transport: 'http', server: `${endpoint}mcp` },
    a2a: { agent_card_url: `${endpoint}.well-known/agent.json` },
  };
  const capabilities = [
    capability(endpoint, {
      name: 'io.proto.agents.commands',
      description: 'Commands: AuthorizePayment, RefundPayment',
      page: 'commands',
      schemaFile: 'commands.json',
      endpoints: [
        { method: 'POST', path: '/commands', description: 'Submit a command' },
        { method: 'GET', path: '/commands', description: 'Command catalogue' },
        { method: 'GET', path: '/commands/{schema}/{version}', description: 'Command data schema' },
      ],
    }),
    capability(endpoint, {
      name: 'io.proto.agents.events',
      description: 'Events of payments',
      page: 'events',
      schemaFile: 'events.json',
      endpoints: [
        { method: 'GET', path: '/events', description: 'Event history' },
        { method: 'GET', path: '/events/stream', description: 'Live events (SSE)' },
      ],
      push: { sse: true },
    }),
    capability(endpoint, {
      name: 'com.example.payments.refunds',
      description: 'Refund listing',
      page: 'refunds',
      schemaFile: 'refund.json',
      endpoints: [{ method: 'GET', path: '/refunds' }],
    }),
  ];
  return { PROTO: { version: '1.0.0', services: { [serviceName]: service }, capabilities, authentication: { type: 'none' } } };
}

/** A minimal A2A agent card at `.well-known/agent.json`, so the advertised URL resolves. */
export function agentCard(endpoint: string) {
  return { name: 'payments', description: 'Payments service', url: endpoint, version: '1.2.0', capabilities: {}, skills: [] };
}

/** `GET /commands`. */
export function commandList(endpoint: string) {
  return {
    commands: commands.map(({ schema, version, description }) => ({ schema, version, dataschema: `${endpoint}commands/${schema}/${version}`, description })),
  };
}

/** `GET /events/catalogue`. */
export function eventCatalogue(endpoint: string) {
  return {
    events: events.map(({ schema, version, description }) => ({ schema, version, dataschema: eventDataschema(endpoint, schema, version), description })),
  };
}

/** `GET /queries`. */
export function queryList(endpoint: string) {
  const { schema, version, description } = paymentStatusQuery;
  return { queries: [{ schema, version, dataschema: `${endpoint}queries/${schema}/${version}`, description }] };
}

/** The `dataschema` URL of an event schema. */
export function eventDataschema(endpoint: string, schema: string, version: string): string {
  return `${endpoint}events/${schema}/${version}`;
}
