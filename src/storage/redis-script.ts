/**
 * A Lua script run by its SHA (`EVALSHA`), loaded with `EVAL` the first time a server does not
 * know it (`NOSCRIPT`: a fresh or restarted Redis). The Redis stores do every multi-key change in
 * one script, so a change is atomic and two replicas never interleave inside it.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** One Lua script, runnable on any connection. */
export class RedisScript {
  readonly #lua: string;
  readonly #sha: string;

  /** @param lua the script; keys arrive in `KEYS`, arguments in `ARGV`. */
  constructor(lua: string) {
    this.#lua = lua;
    this.#sha = createHash('sha1').update(lua).digest('hex');
  }

  /** Runs the script with `keys` and `args`; returns its reply. */
  async run(client: Redis, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await client.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return client.eval(this.#lua, keys.length, ...keys, ...args);
    }
  }
}
