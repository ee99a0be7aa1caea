/**
 * Per-caller catalogues (`access` on `backends[]`, legacy `commands[]` and `queries[]`): who sees
 * and may use a backend, a command or a query. One shape everywhere: a list of values, of which
 * the caller must hold one, a value being a gateway scope (`read`, `write`, `admin`) or a value
 * of its token's scope claim as the token carried it (a role such as `gateway-orders`). A
 * command or query of a backend with `access` needs both lists satisfied. Absent: everyone who
 * has the operation's scope. An event type is seen with its backend and, when legacy commands
 * produce it, with one of them. Hidden things are absent for that caller: not listed, and using one
 * answers exactly as for a thing that does not exist. Built once per configuration.
 */
import type { BackendConfig } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import { legacyCommandProduces } from '../mapping/names.ts';
import type { Principal } from './credentials.ts';

/** What is checked: a command or a query of a backend, by its catalogue schema. */
export interface AccessTarget {
  backend: string;
  schema: string;
}

/** A caller with nothing (the public routes, the public agent card): sees only what has no `access` list. */
export const NOBODY: Principal = { id: '', scopes: new Set() };

/** An event type of a backend (the event catalogue). */
export interface EventTarget {
  backend: string;
  type: string;
}

/**
 * Whether a caller sees one event of the log, by the backend it came from (undefined: it belongs to
 * no backend, such as the gateway's operational events) and its type.
 */
export type EventVisibility = (backend: string | undefined, type: string) => boolean;

/** What one caller sees: the catalogue filters of per-caller catalogues. */
export interface CallerView {
  command(target: AccessTarget): boolean;
  query(target: AccessTarget): boolean;
  backend(backendId: string): boolean;
  event(target: EventTarget): boolean;
  /** The events of the log it sees (`AccessRules.eventsSeenBy`). */
  log: EventVisibility;
}

/** The access lists of one configuration. */
export class AccessRules {
  #backends = new Map<string, string[]>();
  #commands = new Map<string, string[]>();
  #queries = new Map<string, string[]>();
  /** The legacy commands (schemas) that produce each event type, by backend and type. */
  #producers = new Map<string, string[]>();

  constructor(backends: BackendConfig[]) {
    this.reconfigure(backends);
  }

  /** Takes the rules of a new configuration (a reload) in one step: later checks see only the new ones. */
  reconfigure(configs: BackendConfig[]): void {
    const backends = new Map<string, string[]>();
    const commands = new Map<string, string[]>();
    const queries = new Map<string, string[]>();
    const producers = new Map<string, string[]>();
    for (const backend of configs) {
      if (backend.access) backends.set(backend.id, backend.access);
      if (backend.kind !== 'legacy') continue;
      for (const command of backend.commands) if (command.access) commands.set(keyOf(backend.id, command.schema), command.access);
      for (const command of backend.commands) {
        for (const type of legacyCommandProduces(command)) producers.set(keyOf(backend.id, type), [...(producers.get(keyOf(backend.id, type)) ?? []), command.schema]);
      }
      for (const query of backend.queries) if (query.access) queries.set(keyOf(backend.id, query.schema), query.access);
    }
    this.#backends = backends;
    this.#commands = commands;
    this.#queries = queries;
    this.#producers = producers;
  }

  /** True when some `access` is configured (otherwise nothing is filtered). */
  get active(): boolean {
    return this.#backends.size + this.#commands.size + this.#queries.size > 0;
  }

  /** Whether `principal` sees and may send the command. */
  command(principal: Principal, target: AccessTarget): boolean {
    return this.backend(principal, target.backend) && holdsAny(principal, this.#commands.get(keyOf(target.backend, target.schema)));
  }

  /** Whether `principal` sees and may run the query. */
  query(principal: Principal, target: AccessTarget): boolean {
    return this.backend(principal, target.backend) && holdsAny(principal, this.#queries.get(keyOf(target.backend, target.schema)));
  }

  /**
   * Whether `principal` sees an event type: its backend must be visible, and when commands of that
   * backend produce it, one of those commands (the failure type of a hidden command is hidden too).
   */
  event(principal: Principal, target: EventTarget): boolean {
    if (this.#backends.size === 0 && this.#commands.size === 0) return true;
    if (!this.backend(principal, target.backend)) return false;
    const producers = this.#producers.get(keyOf(target.backend, target.type));
    return producers === undefined || producers.some((schema) => this.command(principal, { backend: target.backend, schema }));
  }

  /**
   * The events of the log `principal` sees: those of no backend, and those whose type it sees in the
   * event catalogue (`event`). Read at every event, so a reload's rules apply to open streams too.
   */
  eventsSeenBy(principal: Principal): EventVisibility {
    return (backend, type) => backend === undefined || this.event(principal, { backend, type });
  }

  /** Whether `principal` sees the backend at all. */
  backend(principal: Principal, backendId: string): boolean {
    return holdsAny(principal, this.#backends.get(backendId));
  }

  /** The filters of `principal`, to hand to the catalogues. */
  viewOf(principal: Principal): CallerView {
    return {
      command: (target) => this.command(principal, target),
      query: (target) => this.query(principal, target),
      backend: (backendId) => this.backend(principal, backendId),
      event: (target) => this.event(principal, target),
      log: this.eventsSeenBy(principal),
    };
  }

  /** Throws 404 `SERVICE_NOT_FOUND` for a backend `principal` may not see, exactly as for one that does not exist. */
  requireBackend(principal: Principal, backendId: string): void {
    if (!this.backend(principal, backendId)) throw new ProtoError('SERVICE_NOT_FOUND', `no service "${backendId}"`, { serviceId: backendId });
  }
}

function holdsAny(principal: Principal, values: string[] | undefined): boolean {
  if (!values) return true;
  return values.some((value) => (principal.scopes as ReadonlySet<string>).has(value) || principal.grants?.has(value) === true);
}

function keyOf(backend: string, schema: string): string {
  return `${backend}\n${schema}`;
}
