/**
 * Helpers of the query tests: the YAML of a gateway in front of the example backends with the
 * demo's `list-orders` query, and a scripted proto backend that serves a query catalogue.
 */
import type { ServerResponse } from 'node:http';
import { scriptedBackend, sendJson, type Received } from '../commands/support.ts';

/** The legacy orders backend with the demo's `list-orders` query (and nothing else). */
export function ordersQueryBackend(url: string, id = 'orders', extra = ''): string {
  return `  - id: ${id}
    kind: legacy
    url: ${url}
    queries:
      - schema: list-orders
        version: "1.0"
        description: List orders, optionally of one status
        parameters: { type: object, properties: { status: { type: string, enum: [created, shipped] } }, additionalProperties: false }
        response: { type: object }
        request: { method: GET, path: /orders, query: "params" }
        result: "{ 'orders': response.items }"
${extra}`;
}

/** A proto backend answering `answer` to `GET /queries/echo` (its manifest and catalogue are served too). */
export async function protoQueryBackend(answer: (req: Received, res: ServerResponse, base: string) => void) {
  let base = '';
  const backend = await scriptedBackend((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/.well-known/proto') return sendJson(res, 200, { PROTO: { version: '1.0.0', services: { 'com.test.echo': { version: '1.0.0', description: 'echo', http: { endpoint: `${base}/` } } }, capabilities: [] } });
    if (path === '/queries') return sendJson(res, 200, { queries: [{ schema: 'echo', version: '1', dataschema: `${base}/queries/echo/1` }] });
    if (path === '/queries/echo/1') {
      return sendJson(res, 200, { description: `see ${base}/docs`, parameters: { type: 'object', properties: { n: { type: 'integer' } } }, response: { type: 'object' } });
    }
    if (path === '/commands') return sendJson(res, 200, { commands: [] });
    if (path === '/events') return sendJson(res, 200, { events: [] });
    if (path === '/queries/echo') return answer(req, res, base);
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no such path' } });
  });
  base = backend.url;
  return backend;
}
