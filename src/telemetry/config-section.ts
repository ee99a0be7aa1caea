/**
 * The `telemetry:` section: where the gateway's OpenTelemetry traces go. Absent (and no
 * `OTEL_EXPORTER_OTLP_*ENDPOINT` variable): tracing is off.
 */
import { asMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import type { TelemetryConfig } from '../config/types.ts';

/** `telemetry:` (`traces.sampleRatio` default 1: every trace the gateway starts is kept). */
export const telemetrySection: ConfigSection<'telemetry'> = {
  key: 'telemetry',
  schema: {
    "type": "object",
    "description": "OpenTelemetry. Tracing is off unless traces.endpoint or the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variable is set.",
    "additionalProperties": false,
    "properties": {
      "traces": {
        "type": "object",
        "description": "Traces exported over OTLP/HTTP (JSON).",
        "additionalProperties": false,
        "properties": {
          "endpoint": {
            "$ref": "#/definitions/httpUrl",
            "description": "Base URL of an OTLP/HTTP receiver (e.g. http://127.0.0.1:4318/); /v1/traces is appended unless the path already ends with it. Wins over OTEL_EXPORTER_OTLP_ENDPOINT."
          },
          "sampleRatio": {
            "type": "number",
            "description": "Share of new traces recorded (0..1); a request that carries a traceparent follows its sampled flag. Default 1.",
            "minimum": 0,
            "maximum": 1,
            "default": 1
          },
          "headers": {
            "type": "object",
            "description": "Headers sent with every export (e.g. an Authorization for the receiver); ${VAR} keeps secrets out of the file.",
            "additionalProperties": { "type": "string" }
          }
        }
      }
    }
  },
  defaults(value): TelemetryConfig | undefined {
    if (value === undefined) return undefined;
    const raw = asMap(value);
    if (raw.traces === undefined) return {};
    const traces = asMap(raw.traces);
    return {
      traces: {
        ...(typeof traces.endpoint === 'string' && { endpoint: traces.endpoint }),
        sampleRatio: typeof traces.sampleRatio === 'number' ? traces.sampleRatio : 1,
        ...(traces.headers !== undefined && { headers: Object.fromEntries(Object.entries(asMap(traces.headers)).map(([k, v]) => [k, String(v)])) }),
      },
    };
  },
};
