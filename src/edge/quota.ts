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
 * A slot taken with an `end` callback can be ended from outside: when a reload removes a key (or
 * changes it), `revoke` calls the `end` of every slot its principal holds, so streams it opened close
 * at once; `revokeTokens` does so for every caller that came with an identity provider's token (a
 * reload changed `auth.oauth2`). A token's slot also ends by itself when the token expires
 * (`Principal.tokenExpiresAtMs`): a stream never outlives the credential that opened it.
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

/** Why a slot was ended from outside: its credential was revoked by a reload, or its token expired. */
export type SlotEnd = 'revoked' | 'expired';

/** What ends one held slot (a stream closing, which then releases it). */
interface Holder {
  end(reason: SlotEnd): void;
  /** True when its principal came with a token (`tokenExpiresAtMs` set). */
  token: boolean;
}

/** `setTimeout`'s longest delay; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

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
  /** What ends each held slot taken with an `end` callback, by principal id. */
  readonly #ends = new Map<string, Set<Holder>>();
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
    const holders = [...(this.#ends.get(principalId) ?? [])];
    for (const holder of holders) holder.end('revoked');
    return holders.length;
  }

  /**
   * Ends every slot held by a caller that came with a token (the identity provider's settings
   * changed: its tokens are checked anew when it comes back); returns those principals' ids.
   */
  revokeTokens(): string[] {
    const ids: string[] = [];
    for (const [id, holders] of [...this.#ends]) {
      const tokens = [...holders].filter((holder) => holder.token);
      if (tokens.length > 0) ids.push(id);
      for (const holder of tokens) holder.end('revoked');
    }
    return ids;
  }

  /**
   * Takes a slot for `principal`, or throws the pool's refusal (nothing is taken then). `end`, when
   * given, is called by `revoke`, `revokeTokens` or the token's expiry to end what holds the slot
   * (a stream closes; it then releases); never synchronously from `take`.
   */
  take(principal: Principal, end?: (reason: SlotEnd) => void): Slot {
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
    const holder: Holder | undefined = end && {
      token: principal.tokenExpiresAtMs !== undefined,
      end: (reason) => {
        if (!released) end(reason);
      },
    };
    if (holder) this.#holding(principal.id).add(holder);
    const expiry = holder && endAtExpiry(principal.tokenExpiresAtMs, holder);
    return {
      release: () => {
        if (released) return;
        released = true;
        if (expiry) clearTimeout(expiry.timer);
        if (holder) this.#forgetEnd(principal.id, holder);
        this.#release(counted ? principal.id : undefined);
      },
    };
  }

  #holding(principalId: string): Set<Holder> {
    let ends = this.#ends.get(principalId);
    if (!ends) this.#ends.set(principalId, (ends = new Set()));
    return ends;
  }

  #forgetEnd(principalId: string, holder: Holder): void {
    const ends = this.#ends.get(principalId);
    ends?.delete(holder);
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

/**
 * Ends `holder` with `expired` once `atMs` has passed (in steps when it is further off than a timer
 * can wait; an already past instant still ends it on a later turn, never inside `take`). No timer
 * for a principal without a token or a token without `exp`.
 */
function endAtExpiry(atMs: number | undefined, holder: Holder): { timer: NodeJS.Timeout } | undefined {
  if (atMs === undefined || atMs === Infinity) return undefined;
  const expiry = {} as { timer: NodeJS.Timeout };
  const arm = (): void => {
    const wait = atMs - Date.now();
    expiry.timer = setTimeout(() => (Date.now() >= atMs ? holder.end('expired') : arm()), Math.min(Math.max(wait, 0), MAX_TIMER_MS));
    expiry.timer.unref();
  };
  arm();
  return expiry;
}
