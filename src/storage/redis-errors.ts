/**
 * How a Redis store reports a Redis that cannot take a request right now: `STORE_UNAVAILABLE`
 * (503 with `Retry-After`) on every route and transport, never a 500. "Not now" is:
 *
 * - no answer: a connection error or reset, a command refused while disconnected (no offline
 *   queue), a reply that never came;
 * - a refusal for a passing reason (`NOT_NOW_REPLIES`): a replica (`READONLY`), memory full (`OOM`),
 *   a server loading its data (`LOADING`), a replica without its primary (`MASTERDOWN`), a busy
 *   script (`BUSY`), a cluster moving slots or failing over (`TRYAGAIN`, `CLUSTERDOWN`), too few
 *   replicas (`NOREPLICAS`), a failed background save (`MISCONF`).
 *
 * The message never says that nothing was stored: when the connection dropped after a script was
 * sent, it may have run. A client retries with the same id; a repeat of a stored command gets the
 * first answer (idempotency), so the retry is safe either way. Any other reply error (a bug in a
 * script) stays what it is.
 */
import { ReplyError } from 'ioredis';
import { ProtoError } from '../errors.ts';

/** Reply error codes that mean "not now" (Redis's own error prefixes). */
export const NOT_NOW_REPLIES = ['READONLY', 'OOM', 'LOADING', 'MASTERDOWN', 'BUSY', 'TRYAGAIN', 'CLUSTERDOWN', 'NOREPLICAS', 'MISCONF'] as const;

// Redis puts the code first (`OOM command not allowed…`); inside a script it comes after the
// script's own prefix (`ERR Error running script …: -READONLY …`, or `… @user_script:3: OOM …`).
const NOT_NOW = new RegExp(`(?:^|[\\s:-])(${NOT_NOW_REPLIES.join('|')})(?=[\\s.:]|$)`);

/** True when `err` is a reply error for a passing reason (see `NOT_NOW_REPLIES`). */
export function isNotNowReply(err: unknown): boolean {
  return err instanceof ReplyError && NOT_NOW.test((err as Error).message);
}

/** The 503 for a Redis that cannot take a request now; `why` is logged, not sent. */
export function storeUnavailable(store: string, why?: string): ProtoError {
  return new ProtoError(
    'STORE_UNAVAILABLE',
    `${store} cannot take the request right now${why ? ` (${why})` : ''}; retry later, a command with the same id (whether or not it was stored, its repeat gets the first answer)`,
    undefined,
    { 'Retry-After': '1' },
  );
}

/** Runs `work`; a Redis that cannot take it now (see the module comment) turns into `STORE_UNAVAILABLE`. */
export async function whileRedisAnswers<T>(store: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ProtoError) throw err;
    if (err instanceof ReplyError) {
      if (!isNotNowReply(err)) throw err;
      throw storeUnavailable(store, NOT_NOW.exec((err as Error).message)?.[1]);
    }
    throw storeUnavailable(store);
  }
}
