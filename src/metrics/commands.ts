/**
 * Metrics of the command path (DESIGN.md, Metric names). Created once per registry at boot and
 * passed into the pipeline, the dispatcher and the catalogue. Labels are bounded: `type` is a
 * catalogue command type or `unknown`, `outcome` a fixed word or a catalogued error code,
 * `backend` a configured backend id.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot.ts';

/** How a delivery attempt ended. */
export type AttemptOutcome = 'delivered' | 'rejected' | 'retry' | 'aborted';

/**
 * What became of outbox work this replica's dispatcher took: `claimed` (a fresh claim), `reclaimed`
 * (taken over after a claim's lease ran out: its claimer died or stalled), `released` (given back
 * at shutdown, due again at once: not attempted, or its attempt aborted, which the backend may
 * have received; delivery is at least once).
 */
export type ClaimOutcome = 'claimed' | 'reclaimed' | 'released';

/** The command metrics and the helpers their users call. */
export interface CommandMetrics {
  /** `proto_gateway_commands_total{type,outcome}`: submissions by outcome (`accepted`, `replayed`, or the refusal code in lower case). */
  countSubmission(type: string | undefined, outcome: string): void;
  /** `proto_gateway_command_dispatch_duration_seconds{backend,outcome}`: one delivery attempt. */
  observeAttempt(backend: string, outcome: AttemptOutcome, seconds: number): void;
  /** `proto_gateway_outbox_claims_total{backend,outcome}`: outbox entries this replica's dispatcher claimed, reclaimed or released. */
  countClaim(backend: string, outcome: ClaimOutcome): void;
  /** `proto_gateway_command_retries_total{backend}`: attempts rescheduled after a transient failure. */
  countRetry(backend: string): void;
  /** `proto_gateway_command_failures_total{backend}`: commands finally failed (refused by the backend, or retries exhausted). */
  countFailure(backend: string): void;
  /** `proto_gateway_command_type_conflicts{backend}`: command types of a backend shadowed by an earlier one. */
  setConflicts(backend: string, count: number): void;
  /** `proto_gateway_outbox_depth`: read from `depth` at scrape time. */
  watchOutbox(depth: () => Promise<number>): void;
}

/** Seconds: from a fast loopback call to the default 10 s dispatch timeout. */
const ATTEMPT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Registers the command metrics in `registry`; call once per registry (at boot). */
export function commandMetrics(registry: Registry): CommandMetrics {
  const registers = [registry];
  // The three a command touches (submission, claim, attempt) find their label sets by one lookup (hot.ts).
  const submissions = new HotCounter(new Counter({ name: 'proto_gateway_commands_total', help: 'Command submissions by type and outcome', labelNames: ['type', 'outcome'], registers }));
  const attempts = new HotHistogram(new Histogram({
    name: 'proto_gateway_command_dispatch_duration_seconds',
    help: 'Duration of command delivery attempts to backends',
    labelNames: ['backend', 'outcome'],
    buckets: ATTEMPT_BUCKETS,
    registers,
  }));
  const claims = new HotCounter(new Counter({ name: 'proto_gateway_outbox_claims_total', help: 'Outbox entries this replica claimed, reclaimed after a lease ran out, or released at shutdown (unattempted or aborted)', labelNames: ['backend', 'outcome'], registers }));
  const retries = new Counter({ name: 'proto_gateway_command_retries_total', help: 'Command deliveries rescheduled after a transient failure', labelNames: ['backend'], registers });
  const failures = new Counter({ name: 'proto_gateway_command_failures_total', help: 'Commands that finally failed (refused, or retries exhausted)', labelNames: ['backend'], registers });
  const conflicts = new Gauge({ name: 'proto_gateway_command_type_conflicts', help: 'Command types of a backend ignored because an earlier backend claims them', labelNames: ['backend'], registers });
  let depth: (() => Promise<number>) | undefined;
  new Gauge({
    name: 'proto_gateway_outbox_depth',
    help: 'Accepted commands not yet delivered',
    registers,
    async collect() {
      if (depth) this.set(await depth().catch(() => 0));
    },
  });
  return {
    countSubmission: (type = 'unknown', outcome) => submissions.inc(`${type}\0${outcome}`, () => ({ type, outcome })),
    observeAttempt: (backend, outcome, seconds) => attempts.observe(`${backend}\0${outcome}`, () => ({ backend, outcome }), seconds),
    countClaim: (backend, outcome) => claims.inc(`${backend}\0${outcome}`, () => ({ backend, outcome })),
    countRetry: (backend) => retries.inc({ backend }),
    countFailure: (backend) => failures.inc({ backend }),
    setConflicts: (backend, count) => conflicts.set({ backend }, count),
    watchOutbox: (read) => {
      depth = read;
    },
  };
}
