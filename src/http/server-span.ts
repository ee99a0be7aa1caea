/**
 * The server span of an inbound HTTP request (OpenTelemetry HTTP semantic conventions): child of
 * the caller's `traceparent`, named `{method} {route}` once the route is known. `url.path` is set
 * only for the gateway's own routes: a path the gateway does not own (a pass-through to a backend,
 * an unmatched path) may carry a token, and the route pattern says enough. Never the query string
 * (it may hold `api_key`). Tracing off: the API's no-op span, and nothing else is computed.
 */
import type { IncomingMessage } from 'node:http';
import { requestTarget } from './target.ts';
import { annotate, extractContext, isTraced, SpanKind, SpanStatusCode, startSpan, traceparentOf, withSpan } from '../telemetry/tracing.ts';

/** One request's span. */
export interface HttpServerSpan {
  /** Its `traceparent` (to forward to backends), undefined when tracing is off. */
  readonly traceparent: string | undefined;
  /** Runs the request's handling with the span active. */
  run<T>(fn: () => T): T;
  /** Ends it with the matched route (the metrics' label: a pattern or `unmatched`) and the response status. */
  end(route: string, status: number): void;
}

/** Starts the server span of `req`. */
export function httpServerSpan(req: IncomingMessage): HttpServerSpan {
  const method = req.method ?? 'GET';
  const span = startSpan(method, {
    kind: SpanKind.SERVER,
    parent: extractContext(req.headers),
    attributes: () => ({ 'http.request.method': method, 'url.scheme': 'http', 'network.protocol.version': req.httpVersion }),
  });
  const traced = isTraced(span);
  return {
    traceparent: traced ? traceparentOf(span) : undefined,
    run: (fn) => (traced ? withSpan(span, fn) : fn()),
    end(route, status) {
      if (span.isRecording()) {
        const owned = route !== 'unmatched' && !route.includes('*');
        if (route !== 'unmatched') span.updateName(`${method} ${route}`);
        annotate(span, () => ({
          'http.response.status_code': status,
          ...(route !== 'unmatched' && { 'http.route': route }),
          ...(owned && { 'url.path': requestTarget(req.url ?? '/')?.pathname ?? '/' }),
          ...(status >= 500 && { 'error.type': String(status) }),
        }));
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}
