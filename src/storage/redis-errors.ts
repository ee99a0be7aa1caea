/**
 * How a Redis store reports an unreachable Redis: a connection error, a command refused while
 * disconnected (no offline queue) or a reply that never came becomes `STORE_UNAVAILABLE` (503), so
 * a caller is told the write was not made instead of getting a 500. A reply error from the server
 * itself (a bug in a script) stays what it is.
 */
import { ReplyError } from 'ioredis';
import { ProtoError } from '../errors.ts';

/** Runs `work`; a Redis that cannot be reached turns into `STORE_UNAVAILABLE`. */
export async function whileRedisAnswers<T>(store: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ProtoError || err instanceof ReplyError) throw err;
    throw new ProtoError('STORE_UNAVAILABLE', `${store} is unavailable; nothing was stored`, undefined, { 'Retry-After': '1' });
  }
}
