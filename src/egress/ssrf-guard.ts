/**
 * The SSRF guard of webhook targets (PROTOCOL.md 6.3, PROTOCOL-NOTES.md Security rules): a URL is
 * accepted only when its scheme is `https` (or `http` with `webhooks.allowHttp`), it carries no
 * user-info, its host is a real host, and every address it resolves to (all A and AAAA records,
 * IPv4-mapped IPv6 un-mapped first) is public unicast or inside `webhooks.allowPrivateNetworks`.
 *
 * Odd IPv4 spellings (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) are normalised by the
 * WHATWG URL parser for the special schemes `http` and `https`, the only ones that pass the scheme
 * check; a host that still parses as an IP in some legacy notation is treated as that IP anyway.
 *
 * The guard runs at registration and again at every delivery: `delivery-client.ts` resolves
 * through `resolve()` inside the socket's own lookup, so the address checked is the one connected to.
 *
 * The service registry uses the same guard for runtime service endpoints (`POST /services`), in a
 * stricter mode (`allowPublic: false`): every address must lie inside `registry.allowNetworks`,
 * and refusals carry that feature's own code and field name.
 */
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ProtoError, type ErrorCode } from '../errors.ts';

/** Why a URL was refused: the `details.reason` of `WEBHOOK_URL_REJECTED` (DESIGN.md, Conventions). */
export type RefusalReason = 'scheme' | 'userinfo' | 'host' | 'unresolvable' | 'address';

/** One resolved address, as `dns.lookup(..., { all: true })` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host name to every A and AAAA address. Throws (or returns none) when the name does
 * not resolve. Default: `dns.lookup` with `all: true` (the system resolver, `/etc/hosts` included).
 */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The callback of a socket `lookup` (node:net). */
export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The system resolver: every address of `hostname`, in the order the OS gives them. */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, order: 'verbatim' })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** Settings of the guard. */
export interface SsrfGuardOptions {
  /** Accept plain `http` targets (`webhooks.allowHttp`); default false. */
  allowHttp?: boolean;
  /** CIDRs exempted from the address rule (`webhooks.allowPrivateNetworks`); default none. */
  allowPrivateNetworks?: string[];
  /** Default `systemResolver`. */
  resolver?: Resolver;
  /** Called with the reason of every refusal (metrics). */
  onRefusal?: (reason: RefusalReason) => void;
  /**
   * Accept public unicast addresses (default true). False: only addresses inside
   * `allowPrivateNetworks` pass, and host names are judged by their addresses alone.
   */
  allowPublic?: boolean;
  /** How refusals are worded: their code (default `WEBHOOK_URL_REJECTED`) and the field checked (default `webhook.url`). */
  refusal?: { code: ErrorCode; field: string };
}

/** A URL that passed the guard, with the addresses its host had at that moment. */
export interface CheckedTarget {
  url: URL;
  addresses: ResolvedAddress[];
}

/** Names that never denote a public host (RFC 6761 `localhost`, RFC 6762 `.local`). */
const LOCAL_NAMES = /(^|\.)(localhost|local)\.?$/i;

// Only ipaddr.js's 'unicast' range is public. Besides the RFC ranges it names, IPv4-compatible IPv6
// (::a.b.c.d, deprecated by RFC 4291 2.5.5.1) is refused: some stacks route it to the IPv4 address.
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** Characters of every IPv4 and IPv6 notation (decimal, octal, hex, dotted, colons). */
const IP_CHARACTERS = /^[0-9a-fx.:]+$/i;

/** The SSRF guard: one per gateway, built from `webhooks` at boot. */
export class SsrfGuard {
  readonly #allowHttp: boolean;
  readonly #allowed: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
  readonly #resolver: Resolver;
  readonly #onRefusal: (reason: RefusalReason) => void;
  readonly #allowPublic: boolean;
  readonly #refusal: { code: ErrorCode; field: string };

  constructor(options: SsrfGuardOptions = {}) {
    this.#allowHttp = options.allowHttp ?? false;
    this.#allowPublic = options.allowPublic ?? true;
    this.#refusal = options.refusal ?? { code: 'WEBHOOK_URL_REJECTED', field: 'webhook.url' };
    this.#allowed = (options.allowPrivateNetworks ?? []).map((cidr) => ipaddr.parseCIDR(cidr));
    this.#resolver = options.resolver ?? systemResolver;
    this.#onRefusal = options.onRefusal ?? (() => {});
  }

  /**
   * A `lookup` for net/tls sockets (undici `connect.lookup`, `http.Agent` `lookup`): every address of
   * the host through `resolve`, or the refusal. A connection made with it reaches only an address the
   * guard allows at connect time, so DNS rebinding after a check cannot redirect it. The one
   * implementation behind webhook deliveries and runtime-registered services.
   */
  readonly lookup = (hostname: string, options: { family?: number | string; all?: boolean }, callback: LookupCallback): void => {
    this.resolve(hostname).then(
      (addresses) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
        const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) return callback(Object.assign(new Error(`no IPv${family} address for ${hostname}`), { code: 'ENOTFOUND' }), []);
        if (options.all) return callback(null, usable);
        callback(null, usable[0].address, usable[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };

  /** Checks everything but the addresses: scheme, user-info, host. Returns the parsed URL. */
  parse(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw this.#refuse('host', `${this.#refusal.field} is not an absolute URL`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.#allowHttp)) {
      throw this.#refuse('scheme', `${this.#refusal.field} must use https${this.#allowHttp ? ' or http' : ''}`);
    }
    if (url.username !== '' || url.password !== '') throw this.#refuse('userinfo', `${this.#refusal.field} must not carry user-info`);
    const host = hostOf(url);
    if (host === '' || (this.#allowPublic && literalOf(host) === undefined && (LOCAL_NAMES.test(host) || !host.includes('.')))) {
      throw this.#refuse('host', `${this.#refusal.field} must name a public host`);
    }
    return url;
  }

  /** The full check of a registration: `parse`, then every address of the host must be allowed. */
  async check(raw: string): Promise<CheckedTarget> {
    const url = this.parse(raw);
    return { url, addresses: await this.resolve(hostOf(url)) };
  }

  /**
   * The check before each delivery attempt: `parse`, and the address of an IP literal host. A host
   * name is resolved and checked by the connection's own lookup (`delivery-client.ts`), so the
   * address checked is the address connected to.
   */
  async checkBeforeConnect(raw: string): Promise<URL> {
    const url = this.parse(raw);
    if (literalOf(hostOf(url))) await this.resolve(hostOf(url));
    return url;
  }

  /**
   * Every address of `host` (an IP literal is its own address), each one checked: refuses with
   * `unresolvable` when there is none and `address` when any one is not allowed.
   */
  async resolve(host: string): Promise<ResolvedAddress[]> {
    const literal = literalOf(host);
    const addresses = literal ? [literal] : await this.#lookup(host);
    if (addresses.length === 0) throw this.#refuse('unresolvable', `the host "${host}" of ${this.#refusal.field} does not resolve`);
    const denied = addresses.find((a) => !this.allows(a.address));
    // The refused address stays out of the answer: it would let a caller map internal DNS.
    if (denied) throw this.#refuse('address', `the host "${host}" of ${this.#refusal.field} resolves to ${this.#allowPublic ? 'a non-public address' : 'an address outside the allowed networks'}`);
    return addresses;
  }

  /** True when `address` is public unicast (after un-mapping IPv4-mapped IPv6) or in an allowed network. */
  allows(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    if (this.#allowed.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits))) return true;
    if (!this.#allowPublic || (ip.kind() === 'ipv6' && ip.match(IPV4_COMPATIBLE))) return false;
    return ip.range() === 'unicast';
  }

  async #lookup(host: string): Promise<ResolvedAddress[]> {
    try {
      return await this.#resolver(host);
    } catch {
      return [];
    }
  }

  #refuse(reason: RefusalReason, message: string): ProtoError {
    this.#onRefusal(reason);
    return new ProtoError(this.#refusal.code, message, { reason });
  }
}

/** The host of a URL without IPv6 brackets and without a trailing root dot. */
export function hostOf(url: URL): string {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/** The address of an IP literal host (any notation ipaddr.js reads), or undefined for a name. */
function literalOf(host: string): ResolvedAddress | undefined {
  // Only characters of some IP notation are worth a parse (a name never is: it has other letters).
  if (isIP(host) === 0 && !(IP_CHARACTERS.test(host) && ipaddr.isValid(host))) return undefined;
  const ip = ipaddr.parse(host);
  return { address: ip.toString(), family: ip.kind() === 'ipv6' ? 6 : 4 };
}
