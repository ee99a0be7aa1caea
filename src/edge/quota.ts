/**
 * A quota pool: slots of something a caller holds for a while (an open stream, an MCP session),
 * bounded overall and per principal (DESIGN.md: "a per-principal quota never lets one caller take a
 * whole shared pool"). A caller takes a slot before the thing exists and releases it once when it
 * ends; a refusal is a catalogued error with `details.limit` naming the key that refused it.
 *
 * The global bound is checked first: a full pool refuses everyone alike (its code), a pool with
 * room refuses only the caller that holds its share.
 *
 * The anonymous principal of `auth.type: none` stands for every caller at once, so only the global
 * bound applies to it.
 *
 * A slot taken with an `end` callback can be revoked: when a reload removes a key (or changes it),
 * `revoke` calls the `end` of every slot its principal holds, so streams it opened close at once.
 * A reload changes the bounds with `resize`; slots already held are kept (a smaller pool only
 * refuses new ones until enough end).
 */
import { ProtoError, type ErrorCode } from '../errors.ts';
import type { AdmissionMetrics } from '../metrics/admission.ts';
import { ANONYMOUS, type Principal } from './credentials.ts';

/** A held slot. `release()` is idempotent. */
export interface Slot {
  release(): void;
}

/** How one pool is bounded and how it refuses. */
export interface QuotaLimits {
  /** The pool's name in metrics and messages (`streams`, `mcp.sessions`). */
  name: string;
  /** Slots overall. */
  max: number;
  /** Slots per principal. */
  maxPerPrincipal: number;
  /** The config keys of the two bounds (`details.limit` of a refusal). */
  keys: { max: string; maxPerPrincipal: string };
  /** The code of a refusal by each bound. */
  codes: { global: ErrorCode; principal: ErrorCode };
  /** What is counted, for messages ("streams", "MCP sessions"). */
  noun: string;
  /** Headers of a refusal by the global bound (a 503's `Retry-After`). */
  globalHeaders?: Record<string, string>;
}

/** One bounded pool of slots. */
export class QuotaPool {
  #limits: QuotaLimits;
  readonly #metrics: AdmissionMetrics;
  readonly #perPrincipal = new Map<string, number>();
  /** The `end` callbacks of the held slots, by principal id. */
  readonly #ends = new Map<string, Set<() => void>>();
  #size = 0;

  constructor(limits: QuotaLimits, metrics: AdmissionMetrics) {
    this.#limits = limits;
    this.#metrics = metrics;
  }

  /** Slots held overall. */
  get size(): number {
    return this.#size;
  }

  /** Slots `principalId` holds. */
  heldBy(principalId: string): number {
    return this.#perPrincipal.get(principalId) ?? 0;
  }

  /** The current bounds. */
  get limits(): Readonly<QuotaLimits> {
    return this.#limits;
  }

  /** New bounds (a reload): held slots stay; new ones are checked against these. */
  resize(max: number, maxPerPrincipal: number): void {
    this.#limits = { ...this.#limits, max, maxPerPrincipal };
  }

  /**
   * Ends every slot `principalId` holds that was taken with an `end` callback (its credential was
   * revoked); returns how many. Each `end` is expected to release its slot.
   */
  revoke(principalId: string): number {
    const ends = [...(this.#ends.get(principalId) ?? [])];
    for (const end of ends) end();
    return ends.length;
  }

  /**
   * Takes a slot for `principal`, or throws the pool's refusal (nothing is taken then). `end`, when
   * given, is called by `revoke` to end what holds the slot (a stream closes; it then releases).
   */
  take(principal: Principal, end?: () => void): Slot {
    const limits = this.#limits;
    const counted = principal !== ANONYMOUS;
    if (this.#size >= limits.max) {
      this.#metrics.refused(limits.name, 'global');
      throw new ProtoError(limits.codes.global, `the gateway serves at most ${limits.max} ${limits.noun}; try again later`, {
        limit: limits.keys.max,
        max: limits.max,
      }, limits.globalHeaders);
    }
    if (counted && this.heldBy(principal.id) >= limits.maxPerPrincipal) {
      this.#metrics.refused(limits.name, 'principal');
      throw new ProtoError(limits.codes.principal, `at most ${limits.maxPerPrincipal} ${limits.noun} per caller`, {
        limit: limits.keys.maxPerPrincipal,
        max: limits.maxPerPrincipal,
      });
    }
    this.#size += 1;
    if (counted) this.#perPrincipal.set(principal.id, this.heldBy(principal.id) + 1);
    this.#metrics.held(limits.name, 1);
    let released = false;
    const ended = end && (() => {
      if (!released) end();
    });
    if (ended) this.#holding(principal.id).add(ended);
    return {
      release: () => {
        if (released) return;
        released = true;
        if (ended) this.#forgetEnd(principal.id, ended);
        this.#release(counted ? principal.id : undefined);
      },
    };
  }

  #holding(principalId: string): Set<() => void> {
    let ends = this.#ends.get(principalId);
    if (!ends) this.#ends.set(principalId, (ends = new Set()));
    return ends;
  }

  #forgetEnd(principalId: string, end: () => void): void {
    const ends = this.#ends.get(principalId);
    ends?.delete(end);
    if (ends?.size === 0) this.#ends.delete(principalId);
  }

  #release(principalId: string | undefined): void {
    this.#size -= 1;
    this.#metrics.held(this.#limits.name, -1);
    if (principalId === undefined) return;
    const left = this.heldBy(principalId) - 1;
    if (left > 0) this.#perPrincipal.set(principalId, left);
    else this.#perPrincipal.delete(principalId);
  }
}
