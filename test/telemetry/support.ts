/**
 * A loopback OTLP/HTTP receiver for the tracing tests: takes `POST /v1/traces` exports (JSON, as the
 * gateway's exporter sends them), decodes every span, and keeps the raw bodies and headers (so a
 * test can prove no credential or payload was exported).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { track } from '../support/gateway.ts';
import { expect } from 'vitest';

/** OTLP span kinds (opentelemetry-proto `Span.SpanKind`). */
export const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

/** One exported span, decoded. */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  /** `service.name` of its resource. */
  service: string;
}

/** A running receiver. */
export interface OtlpReceiver {
  url: string;
  spans: ExportedSpan[];
  /** Raw export bodies, in arrival order. */
  bodies: string[];
  headers: IncomingHttpHeaders[];
  /** Requests to any other path. */
  strays: string[];
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

/** Starts a receiver on 127.0.0.1:0 (closed by `closeAll`). */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ExportedSpan[] = [];
  const bodies: string[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const strays: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        strays.push(`${req.method} ${req.url}`);
        return void res.writeHead(404).end();
      }
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      headers.push(req.headers);
      spans.push(...decodeExport(JSON.parse(body)));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return track({
    url: `http://127.0.0.1:${port}/`,
    spans,
    bodies,
    headers,
    strays,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  });
}

/** The spans of an `ExportTraceServiceRequest` in OTLP/JSON (ids as hex strings). */
export function decodeExport(request: any): ExportedSpan[] {
  const out: ExportedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        out.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map((link: any) => ({ traceId: link.traceId, spanId: link.spanId })),
          service: String(resource['service.name']),
        });
      }
    }
  }
  return out;
}

function attributesOf(list: Array<{ key: string; value: OtlpValue }> | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}

/** The `traceparent` naming a span (sampled). */
export function traceparentOfSpan(span: Pick<ExportedSpan, 'traceId' | 'spanId'>): string {
  return `00-${span.traceId}-${span.spanId}-01`;
}

/** The one span of `spans` that `predicate` picks (`what` names it in the failure). */
export function one(spans: ExportedSpan[], predicate: (span: ExportedSpan) => boolean, what: string): ExportedSpan {
  const found = spans.filter(predicate);
  expect(found, what).toHaveLength(1);
  return found[0]!;
}
