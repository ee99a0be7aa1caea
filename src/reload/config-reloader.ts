/**
 * Live configuration reload (SIGHUP, or a change of the file with `server.watchConfig`): loads the
 * file, validates it whole, and hands the new generation to the running components.
 *
 * - Invalid (any problem the loader or a step's `check` finds): nothing changes; the problems are
 *   logged as `validate` prints them (`file:line:col: message`), outcome `invalid`.
 * - Valid: every step's `check` passes first, then each step `apply`s in order. Settings that
 *   cannot be applied in place (`needsRestart`, config-diff.ts) are named and left as they run; the
 *   rest applies. A step that fails is logged and named (outcome `failed`); the others still apply.
 * - The same file again is `unchanged` (same generation hash).
 *
 * Reloads run one at a time. A generation is the hash of the loaded configuration and when it was
 * loaded; `/status`, the console and the metrics show it with the last reload's outcome.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { diffConfig, needsRestart, type ConfigDiff } from '../config/config-diff.ts';
import { ConfigError, formatProblems } from '../config/problems.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { ConfigMetrics, ReloadOutcomeName } from '../metrics/config.ts';

/** A loaded configuration's identity: a hash of its content and when it was loaded. */
export interface ConfigGeneration {
  /** The first 16 hex digits of the SHA-256 of the normalised configuration. */
  hash: string;
  /** When it was loaded, RFC 3339. */
  loadedAt: string;
}

/** What one reload did (the log line, `/status` `config.lastReload`). */
export interface ReloadReport {
  /** What asked for it: `SIGHUP`, `watch` (the file changed), or a caller's word. */
  trigger: string;
  /** When it ended, RFC 3339. */
  at: string;
  outcome: ReloadOutcomeName;
  /** The generation running after it. */
  generation: ConfigGeneration;
  backendsAdded: string[];
  backendsRemoved: string[];
  backendsChanged: string[];
  /** Changed settings that apply only after a restart (cumulative since the start). */
  needsRestart: string[];
  /** `invalid`: the problems, one `file:line:col: message` per line. */
  problems?: string;
  /** `failed`: the steps that could not follow, `step: message`. */
  failures?: string[];
}

/** One part of the gateway that follows a reload. */
export interface ReloadStep {
  /** Its name in the log and in `failures` (`backends`, `auth`, `cors`…). */
  name: string;
  /** Throws (an Error whose message says why) when `next` cannot be applied at all: the reload is `invalid`. */
  check?(next: GatewayConfig): void;
  /** Applies `next` (after every check passed). */
  apply(next: GatewayConfig, previous: GatewayConfig, diff: ConfigDiff): Promise<void> | void;
}

/** What the reloader needs. */
export interface ConfigReloaderOptions {
  /** The configuration file. */
  file: string;
  /** The configuration the gateway was started with. */
  boot: GatewayConfig;
  /** Loads and validates the file; throws `ConfigError` with its problems. */
  load(file: string): Promise<GatewayConfig>;
  /** The steps, in the order they apply. */
  steps: ReloadStep[];
  metrics: ConfigMetrics;
  logger: Logger;
  now?: () => number;
}

/** Reloads the configuration file into the running gateway (see the module comment). */
export class ConfigReloader {
  readonly #o: ConfigReloaderOptions;
  #current: GatewayConfig;
  #generation: ConfigGeneration;
  #last: ReloadReport | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ConfigReloaderOptions) {
    this.#o = options;
    this.#current = options.boot;
    this.#generation = this.#generationOf(options.boot);
    options.metrics.generation(Date.parse(this.#generation.loadedAt));
  }

  /** The configuration of the running generation. */
  get current(): GatewayConfig {
    return this.#current;
  }

  /** What `/status` shows: the running generation, what needs a restart, the last reload (null before the first). */
  status(): { generation: ConfigGeneration; needsRestart: string[]; lastReload: ReloadReport | null } {
    return { generation: this.#generation, needsRestart: this.#needsRestart(), lastReload: this.#last ?? null };
  }

  /** Loads the file and applies it; resolves with the report (never rejects). Reloads run one at a time. */
  reload(trigger: string): Promise<ReloadReport> {
    const run = this.#queue.then(() => this.#reload(trigger));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #reload(trigger: string): Promise<ReloadReport> {
    const { logger, metrics, file } = this.#o;
    let next: GatewayConfig;
    try {
      next = await this.#o.load(file);
      for (const step of this.#o.steps) step.check?.(next);
    } catch (err) {
      const problems = err instanceof ConfigError ? formatProblems(err.problems) : `${file}: ${(err as Error).message}`;
      const report = this.#report(trigger, 'invalid', undefined, { problems });
      logger.error({ ...report, file }, 'configuration reload: the file is invalid; nothing changed');
      return report;
    }
    const generation = this.#generationOf(next);
    if (generation.hash === this.#generation.hash) {
      const report = this.#report(trigger, 'unchanged');
      logger.info({ ...report, file }, 'configuration reload: unchanged');
      return report;
    }
    const previous = this.#current;
    const diff = diffConfig(previous, next);
    const failures: string[] = [];
    for (const step of this.#o.steps) {
      try {
        await step.apply(next, previous, diff);
      } catch (err) {
        failures.push(`${step.name}: ${(err as Error).message}`);
        logger.error({ err, step: step.name }, 'configuration reload: a part could not follow');
      }
    }
    this.#current = next;
    this.#generation = generation;
    metrics.generation(Date.parse(generation.loadedAt));
    const report = this.#report(trigger, failures.length > 0 ? 'failed' : 'applied', diff, failures.length > 0 ? { failures } : {});
    const restart = report.needsRestart.length > 0 ? `; needs a restart: ${report.needsRestart.join(', ')}` : '';
    logger.warn({ ...report, file }, `configuration reload: ${report.outcome}${restart}`);
    return report;
  }

  #report(trigger: string, outcome: ReloadOutcomeName, diff?: ConfigDiff, extra: Pick<ReloadReport, 'problems' | 'failures'> = {}): ReloadReport {
    this.#o.metrics.reloaded(outcome);
    this.#last = {
      trigger,
      at: new Date(this.#now()).toISOString(),
      outcome,
      generation: this.#generation,
      backendsAdded: diff?.backendsAdded ?? [],
      backendsRemoved: diff?.backendsRemoved ?? [],
      backendsChanged: diff?.backendsChanged ?? [],
      needsRestart: this.#needsRestart(),
      ...extra,
    };
    return this.#last;
  }

  /** Settings of the running generation that differ from what the process started with and cannot apply in place. */
  #needsRestart(): string[] {
    return needsRestart(diffConfig(this.#o.boot, this.#current));
  }

  #generationOf(config: GatewayConfig): ConfigGeneration {
    return { hash: configHash(config), loadedAt: new Date(this.#now()).toISOString() };
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }
}

/** The hash of a configuration's content (not of where it was read from). */
export function configHash(config: GatewayConfig): string {
  const { file: _file, ...content } = config;
  return createHash('sha256').update(JSON.stringify(content)).digest('hex').slice(0, 16);
}
