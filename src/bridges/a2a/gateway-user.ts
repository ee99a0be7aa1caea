/**
 * The authenticated gateway principal as the A2A SDK's `User`: tasks are scoped to its id, the
 * executor checks its scopes, and its grants reach the command pipeline and the skills it is shown.
 */
import type { User } from '@a2a-js/sdk/server';
import type { Scope } from '../../config/types.ts';
import type { Principal } from '../../http/route.ts';

/** A principal seen by the A2A SDK. */
export class GatewayUser implements User {
  readonly #principal: Principal;

  constructor(principal: Principal) {
    this.#principal = principal;
  }

  get isAuthenticated(): boolean {
    return true;
  }

  /** The principal's id (the owner of its tasks). */
  get userName(): string {
    return this.#principal.id;
  }

  /** The principal's scopes. */
  get scopes(): ReadonlySet<Scope> {
    return this.#principal.scopes;
  }

  /** The admitted principal itself, grants included (per-caller catalogues, the command pipeline). */
  get principal(): Principal {
    return this.#principal;
  }
}
