/**
 * The webhook subscription store on Redis (`storage.driver: redis`), shared by every replica on
 * one prefix, indexed so no listing scans every subscription:
 * `P sub:all` hash id → subscription JSON (its status aside), `P sub:status` hash id → status,
 * `P sub:seq` the creation counter, sorted sets by creation number `P sub:principal:{principal}`
 * and `P sub:active`, and `P sub:service:{serviceId}` the set of a service's subscriptions.
 * What changes after creation lives beside the JSON, one hash each keyed by id: `P sub:failures`
 * and `P sub:failing-since` (the failing streak), `P sub:disabled` (`{atMs} {reason}`),
 * `P sub:secret` (the secret after a rotation; before one, the JSON's), `P sub:previous-secret`
 * (`{untilMs} {secret}`) with `P sub:previous-secret:until` (sorted by the end of the overlap).
 * Recoveries: `P rec:all` hash id → JSON, `P rec:running` hash subscription id → id of its running
 * recovery, `P rec:lease` hash id → `{untilMs} {owner}`.
 * Each change is one Lua script (atomic); key names are built from the prefix inside the scripts
 * (each names `P sub:all` in `KEYS` so a Redis Cluster runs it on the prefix's slot, where every
 * key of the tagged prefix lives).
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import type { DisabledReason, FailingStreak, Recovery, StatusChange, Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

/** Where the store connects. */
export type RedisSubscriptionStoreOptions = RedisStoreOptions;

/** The hashes of what changes after creation, keyed by subscription id. */
const STATE_HASHES = ['sub:failures', 'sub:failing-since', 'sub:disabled', 'sub:secret', 'sub:previous-secret'] as const;

/**
 * ARGV: prefix, id, JSON, status, principal, serviceId ('' = none), then the state as created
 * (failures, failing since, disabled, previous secret, its end; '' = none).
 */
const CREATE = new RedisScript(`
local p = ARGV[1]
local id = ARGV[2]
if redis.call('HEXISTS', p .. 'sub:all', id) == 1 then return 0 end
local seq = redis.call('INCR', p .. 'sub:seq')
redis.call('HSET', p .. 'sub:all', id, ARGV[3])
redis.call('HSET', p .. 'sub:status', id, ARGV[4])
redis.call('HSET', p .. 'sub:number', id, seq)
redis.call('ZADD', p .. 'sub:principal:' .. ARGV[5], seq, id)
if ARGV[4] == 'active' then redis.call('ZADD', p .. 'sub:active', seq, id) end
if ARGV[6] ~= '' then redis.call('SADD', p .. 'sub:service:' .. ARGV[6], id) end
if ARGV[7] ~= '0' then
  redis.call('HSET', p .. 'sub:failures', id, ARGV[7])
  redis.call('HSET', p .. 'sub:failing-since', id, ARGV[8])
end
if ARGV[9] ~= '' then redis.call('HSET', p .. 'sub:disabled', id, ARGV[9]) end
if ARGV[10] ~= '' then
  redis.call('HSET', p .. 'sub:previous-secret', id, ARGV[10])
  redis.call('ZADD', p .. 'sub:previous-secret:until', ARGV[11], id)
end
return 1`);

/** ARGV: prefix, id, status, disabled ('{atMs} {reason}'). Returns 1 when the status changed. */
const SET_STATUS = new RedisScript(`
local p = ARGV[1]
local id = ARGV[2]
local seq = redis.call('HGET', p .. 'sub:number', id)
if not seq then return 0 end
if redis.call('HGET', p .. 'sub:status', id) == ARGV[3] then return 0 end
redis.call('HSET', p .. 'sub:status', id, ARGV[3])
if ARGV[3] == 'active' then
  redis.call('ZADD', p .. 'sub:active', seq, id)
  redis.call('HDEL', p .. 'sub:disabled', id)
  redis.call('HDEL', p .. 'sub:failures', id)
  redis.call('HDEL', p .. 'sub:failing-since', id)
else
  redis.call('ZREM', p .. 'sub:active', id)
  redis.call('HSET', p .. 'sub:disabled', id, ARGV[4])
end
return 1`);

/** ARGV: prefix, id, '1' succeeded or '0' failed, now (ms). Returns the streak {failures, since} (see \`recordAttempt\`), or nil. */
const RECORD_ATTEMPT = new RedisScript(`
local p = ARGV[1]
local id = ARGV[2]
if redis.call('HEXISTS', p .. 'sub:number', id) == 0 then return nil end
if ARGV[3] == '1' then
  local failures = redis.call('HGET', p .. 'sub:failures', id)
  if not failures then return nil end
  local since = redis.call('HGET', p .. 'sub:failing-since', id)
  redis.call('HDEL', p .. 'sub:failures', id)
  redis.call('HDEL', p .. 'sub:failing-since', id)
  return {tonumber(failures), since}
end
local failures = redis.call('HINCRBY', p .. 'sub:failures', id, 1)
redis.call('HSETNX', p .. 'sub:failing-since', id, ARGV[4])
return {failures, redis.call('HGET', p .. 'sub:failing-since', id)}`);

/** ARGV: prefix, id, new secret, end of the overlap (ms). The current secret (hash, else the JSON's) becomes the previous one. */
const ROTATE = new RedisScript(`
local p = ARGV[1]
local id = ARGV[2]
local json = redis.call('HGET', p .. 'sub:all', id)
if not json then return 0 end
local current = redis.call('HGET', p .. 'sub:secret', id)
if not current then
  local secret = cjson.decode(json).secret
  if type(secret) == 'string' then current = secret end
end
if current then
  redis.call('HSET', p .. 'sub:previous-secret', id, ARGV[4] .. ' ' .. current)
  redis.call('ZADD', p .. 'sub:previous-secret:until', ARGV[4], id)
else
  redis.call('HDEL', p .. 'sub:previous-secret', id)
  redis.call('ZREM', p .. 'sub:previous-secret:until', id)
end
redis.call('HSET', p .. 'sub:secret', id, ARGV[3])
return 1`);

/** ARGV: prefix, id, subscription id, JSON. Returns the id of the subscription's running recovery, or false when stored. */
const START_RECOVERY = new RedisScript(`
local p = ARGV[1]
local running = redis.call('HGET', p .. 'rec:running', ARGV[3])
if running then return running end
redis.call('HSET', p .. 'rec:all', ARGV[2], ARGV[4])
redis.call('HSET', p .. 'rec:running', ARGV[3], ARGV[2])
return false`);

/** ARGV: prefix, owner, now (ms), lease end (ms). Returns the JSON of the recovery leased, or false. */
const CLAIM_RECOVERY = new RedisScript(`
local p = ARGV[1]
for _, id in ipairs(redis.call('HVALS', p .. 'rec:running')) do
  local lease = redis.call('HGET', p .. 'rec:lease', id)
  if not lease or tonumber(string.match(lease, '^(%d+)')) <= tonumber(ARGV[3]) then
    redis.call('HSET', p .. 'rec:lease', id, ARGV[4] .. ' ' .. ARGV[2])
    return redis.call('HGET', p .. 'rec:all', id)
  end
end
return false`);

/** ARGV: prefix, id, owner, JSON, lease end (ms) or '' to release, '1' when no longer running, subscription id. Returns 1 when written. */
const SAVE_RECOVERY = new RedisScript(`
local p = ARGV[1]
local id = ARGV[2]
local lease = redis.call('HGET', p .. 'rec:lease', id)
if not lease or string.sub(lease, string.find(lease, ' ') + 1) ~= ARGV[3] then return 0 end
redis.call('HSET', p .. 'rec:all', id, ARGV[4])
if ARGV[5] == '' then redis.call('HDEL', p .. 'rec:lease', id) else redis.call('HSET', p .. 'rec:lease', id, ARGV[5] .. ' ' .. ARGV[3]) end
if ARGV[6] == '1' and redis.call('HGET', p .. 'rec:running', ARGV[7]) == id then redis.call('HDEL', p .. 'rec:running', ARGV[7]) end
return 1`);

/** ARGV: prefix, now (ms). Returns how many previous secrets were deleted. */
const DROP_EXPIRED_SECRETS = new RedisScript(`
local p = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', p .. 'sub:previous-secret:until', '-inf', ARGV[2])
for _, id in ipairs(ids) do
  redis.call('HDEL', p .. 'sub:previous-secret', id)
  redis.call('ZREM', p .. 'sub:previous-secret:until', id)
end
return #ids`);

/** ARGV: prefix, then the ids; returns the ids deleted. */
const DELETE = new RedisScript(`
local p = ARGV[1]
local deleted = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local json = redis.call('HGET', p .. 'sub:all', id)
  if json then
    local sub = cjson.decode(json)
    redis.call('HDEL', p .. 'sub:all', id)
    redis.call('HDEL', p .. 'sub:status', id)
    redis.call('HDEL', p .. 'sub:number', id)
    redis.call('ZREM', p .. 'sub:active', id)
    redis.call('ZREM', p .. 'sub:principal:' .. sub.principal, id)
    redis.call('ZREM', p .. 'sub:previous-secret:until', id)
    for _, hash in ipairs({'${STATE_HASHES.join("', '")}'}) do redis.call('HDEL', p .. hash, id) end
    if type(sub.serviceId) == 'string' then redis.call('SREM', p .. 'sub:service:' .. sub.serviceId, id) end
    table.insert(deleted, id)
  end
end
return deleted`);

const STORE = 'the subscription store (Redis)';

/** A `SubscriptionStore` on Redis. */
export class RedisSubscriptionStore implements SubscriptionStore {
  readonly #options: RedisSubscriptionStoreOptions;
  readonly #p: string;
  /** The key every script names in KEYS, so a Redis Cluster runs it on the node of the prefix's slot (the others are built in the script). */
  readonly #routing: string;
  #client: Redis | undefined;

  constructor(options: RedisSubscriptionStoreOptions) {
    this.#options = options;
    this.#p = options.prefix;
    this.#routing = `${options.prefix}sub:all`;
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  async create(subscription: Subscription): Promise<void> {
    const { status, disabled, failing, previousSecret, ...rest } = subscription;
    const state = [
      String(failing?.failures ?? 0), String(failing?.sinceMs ?? ''),
      disabled ? `${disabled.atMs} ${disabled.reason}` : '',
      previousSecret ? `${previousSecret.untilMs} ${previousSecret.secret}` : '', String(previousSecret?.untilMs ?? ''),
    ];
    const created = await this.#run(CREATE, [JSON.stringify(rest), status, subscription.principal, subscription.serviceId ?? '', ...state], subscription.id);
    if (created !== 1) throw new Error(`subscription ${subscription.id} exists`);
  }

  async get(id: string): Promise<Subscription | undefined> {
    return (await this.#load([id]))[0];
  }

  async listByPrincipal(principal: string): Promise<Subscription[]> {
    const client = this.#connected();
    return this.#load(await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}sub:principal:${principal}`, '0', '-1')));
  }

  async listActive(): Promise<Subscription[]> {
    const client = this.#connected();
    return this.#load(await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}sub:active`, '0', '-1')));
  }

  async setStatus(id: string, status: SubscriptionStatus, change: StatusChange): Promise<boolean> {
    return (await this.#run(SET_STATUS, [status, `${change.atMs} ${change.reason ?? 'failing'}`], id)) === 1;
  }

  async recordAttempt(id: string, succeeded: boolean, nowMs: number): Promise<FailingStreak | undefined> {
    const streak = (await this.#run(RECORD_ATTEMPT, [succeeded ? '1' : '0', String(nowMs)], id)) as [number, string] | null;
    return streak ? { failures: Number(streak[0]), sinceMs: Number(streak[1]) } : undefined;
  }

  async rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    return (await this.#run(ROTATE, [secret, String(previousUntilMs)], id)) === 1;
  }

  async dropExpiredSecrets(nowMs: number): Promise<number> {
    const client = this.#connected();
    return Number(await whileRedisAnswers(STORE, () => DROP_EXPIRED_SECRETS.run(client, [this.#routing], [this.#p, String(nowMs)])));
  }

  async startRecovery(recovery: Recovery): Promise<string | undefined> {
    const running = await this.#run(START_RECOVERY, [recovery.subscriptionId, JSON.stringify(recovery)], recovery.id);
    return typeof running === 'string' ? running : undefined;
  }

  async getRecovery(id: string): Promise<Recovery | undefined> {
    const client = this.#connected();
    const json = await whileRedisAnswers(STORE, () => client.hget(`${this.#p}rec:all`, id));
    return json === null ? undefined : (JSON.parse(json) as Recovery);
  }

  async claimRecovery(owner: string, nowMs: number, leaseMs: number): Promise<Recovery | undefined> {
    const client = this.#connected();
    const json = await whileRedisAnswers(STORE, () => CLAIM_RECOVERY.run(client, [this.#routing], [this.#p, owner, String(nowMs), String(nowMs + leaseMs)]));
    return typeof json === 'string' ? (JSON.parse(json) as Recovery) : undefined;
  }

  async saveRecovery(recovery: Recovery, owner: string, nowMs: number, leaseMs: number, release = false): Promise<boolean> {
    const done = recovery.status !== 'running';
    const leaseEnd = release || done ? '' : String(nowMs + leaseMs);
    const saved = await this.#run(SAVE_RECOVERY, [owner, JSON.stringify(recovery), leaseEnd, done ? '1' : '0', recovery.subscriptionId], recovery.id);
    return saved === 1;
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.#run(DELETE, [], id)) as string[]).length === 1;
  }

  async deleteByService(serviceId: string): Promise<string[]> {
    const client = this.#connected();
    const ids = await whileRedisAnswers(STORE, () => client.smembers(`${this.#p}sub:service:${serviceId}`));
    if (ids.length === 0) return [];
    return (await this.#run(DELETE, ids.slice(1), ids[0]!)) as string[];
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  /** The subscriptions of `ids`, in that order, skipping any deleted meanwhile. */
  async #load(ids: string[]): Promise<Subscription[]> {
    if (ids.length === 0) return [];
    const client = this.#connected();
    const hashes = ['sub:all', 'sub:status', ...STATE_HASHES];
    const [rows, statuses, failures, failingSince, disabled, secrets, previous] = await whileRedisAnswers(STORE, () =>
      Promise.all(hashes.map((hash) => client.hmget(`${this.#p}${hash}`, ...ids))),
    );
    const found: Subscription[] = [];
    rows!.forEach((row, i) => {
      const status = statuses![i];
      if (row === null || !status) return;
      const subscription: Subscription = { ...(JSON.parse(row) as Omit<Subscription, 'status'>), status: status as SubscriptionStatus };
      if (secrets![i]) subscription.secret = secrets![i]!;
      if (failures![i]) subscription.failing = { failures: Number(failures![i]), sinceMs: Number(failingSince![i]) };
      if (disabled![i]) {
        const [atMs, reason] = splitFirst(disabled![i]!);
        subscription.disabled = { atMs: Number(atMs), reason: reason as DisabledReason };
      }
      if (previous![i]) {
        const [untilMs, secret] = splitFirst(previous![i]!);
        subscription.previousSecret = { secret, untilMs: Number(untilMs) };
      }
      found.push(subscription);
    });
    return found;
  }

  /** Runs a script with ARGV prefix, id, ...args. */
  async #run(script: RedisScript, args: string[], id: string): Promise<unknown> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => script.run(client, [this.#routing], [this.#p, id, ...args]));
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisSubscriptionStore is not open');
    return this.#client;
  }
}

/** `value` split at its first space: the number before it and the text after it. */
function splitFirst(value: string): [string, string] {
  const space = value.indexOf(' ');
  return [value.slice(0, space), value.slice(space + 1)];
}
