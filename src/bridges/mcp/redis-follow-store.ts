/**
 * The MCP follow store on Redis (`storage.driver: redis`), shared by every replica on one prefix:
 * a session opened on one replica is known to all, and a command followed on one is pushed by
 * whichever holds the client's stream. Keys (`P` = prefix): `P mcp:sessions` sorted set of session
 * ids by expiry (epoch ms), `P mcp:principals` hash id → principal, `P mcp:follows:{owner}` hash
 * correlation id → follow JSON (with an order number), expiring with its owner. Opening a session
 * (sweep, count, add) and adding a follow (add, trim) are one Lua script each.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import type { Follow, FollowOwner, FollowStore, FollowStoreLimits, SessionOpening } from './follow-store.ts';

/** KEYS: sessions, principals. ARGV: id, principal, now, expiry, max, max per principal. Returns 1 when opened, 0 when full, 2 when the principal holds its share. */
const OPEN_SESSION = new RedisScript(`
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])) do redis.call('HDEL', KEYS[2], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then return 0 end
local held = 0
for _, p in ipairs(redis.call('HVALS', KEYS[2])) do if p == ARGV[2] then held = held + 1 end end
if held >= tonumber(ARGV[6]) then return 2 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1`);

/** KEYS: follows. ARGV: correlation id, follow JSON (without order), ttl ms, max. */
const ADD_FOLLOW = new RedisScript(`
local order = redis.call('HINCRBY', KEYS[1], '#order', 1)
local follow = cjson.decode(ARGV[2])
follow.order = order
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(follow))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local count = redis.call('HLEN', KEYS[1]) - 1
if count > tonumber(ARGV[4]) then
  local oldest, oldestOrder = nil, nil
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    if all[i] ~= '#order' then
      local o = cjson.decode(all[i + 1]).order
      if oldestOrder == nil or o < oldestOrder then oldest, oldestOrder = all[i], o end
    end
  end
  if oldest then redis.call('HDEL', KEYS[1], oldest) end
end
return order`);

/** KEYS: follows. ARGV: correlation id, event id. Only an existing follow is updated. */
const DELIVERED = new RedisScript(`
local json = redis.call('HGET', KEYS[1], ARGV[1])
if not json then return 0 end
local follow = cjson.decode(json)
follow.lastEventId = ARGV[2]
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(follow))
return 1`);

const STORE = 'the MCP follow store (Redis)';

/** The shared adapter. */
export class RedisFollowStore implements FollowStore {
  readonly #options: RedisStoreOptions;
  readonly #limits: FollowStoreLimits;
  readonly #keys: { sessions: string; principals: string; follows: string };
  #client: Redis | undefined;

  constructor(options: RedisStoreOptions, limits: FollowStoreLimits) {
    this.#options = options;
    this.#limits = limits;
    const p = `${options.prefix}mcp:`;
    this.#keys = { sessions: `${p}sessions`, principals: `${p}principals`, follows: `${p}follows:` };
  }

  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  async openSession(id: string, principal: string): Promise<SessionOpening> {
    const now = Date.now();
    const opened = await this.#run(() =>
      OPEN_SESSION.run(this.#connected(), [this.#keys.sessions, this.#keys.principals], [id, principal, now, now + this.#limits.idleTimeoutMs, this.#limits.maxSessions, this.#limits.maxSessionsPerPrincipal ?? this.#limits.maxSessions]),
    );
    return opened === 1 ? 'opened' : opened === 2 ? 'principal-full' : 'full';
  }

  async touchSession(id: string): Promise<string | undefined> {
    const client = this.#connected();
    const now = Date.now();
    const [expires, principal] = await this.#run(() => Promise.all([client.zscore(this.#keys.sessions, id), client.hget(this.#keys.principals, id)]));
    if (expires === null || principal === null || Number(expires) <= now) return undefined;
    const until = now + this.#limits.idleTimeoutMs;
    await this.#run(() => client.multi().zadd(this.#keys.sessions, 'XX', until, id).pexpire(this.#followKey(`session:${id}`), this.#limits.idleTimeoutMs).exec());
    return principal;
  }

  async endSession(id: string): Promise<void> {
    const client = this.#connected();
    await this.#run(() => client.multi().zrem(this.#keys.sessions, id).hdel(this.#keys.principals, id).del(this.#followKey(`session:${id}`)).exec());
  }

  async sessionCount(): Promise<number> {
    return this.#run(() => this.#connected().zcount(this.#keys.sessions, `(${Date.now()}`, '+inf'));
  }

  async follow(owner: FollowOwner, correlationId: string, afterPosition: number): Promise<void> {
    const follow: Follow = { correlationId, afterPosition };
    await this.#run(() => ADD_FOLLOW.run(this.#connected(), [this.#followKey(owner)], [correlationId, JSON.stringify(follow), this.#limits.idleTimeoutMs, this.#limits.maxFollows]));
  }

  async follows(owner: FollowOwner): Promise<Follow[]> {
    const all = await this.#run(() => this.#connected().hgetall(this.#followKey(owner)));
    return Object.entries(all)
      .filter(([key]) => key !== '#order')
      .map(([, json]) => JSON.parse(json) as Follow & { order: number })
      .sort((a, b) => a.order - b.order)
      .map(({ order: _order, ...follow }) => follow);
  }

  async delivered(owner: FollowOwner, correlationId: string, eventId: string): Promise<void> {
    await this.#run(() => DELIVERED.run(this.#connected(), [this.#followKey(owner)], [correlationId, eventId]));
  }

  async unfollow(owner: FollowOwner, correlationId: string): Promise<void> {
    await this.#run(() => this.#connected().hdel(this.#followKey(owner), correlationId));
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  #followKey(owner: FollowOwner): string {
    return `${this.#keys.follows}${owner}`;
  }

  #run<T>(work: () => Promise<T>): Promise<T> {
    return whileRedisAnswers(STORE, work);
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisFollowStore is not open');
    return this.#client;
  }
}
