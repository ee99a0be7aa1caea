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
 * Each change is one Lua script (atomic) that declares every key it touches in `KEYS`: the fixed
 * keys (`FIXED`, in that order, named in the script through `k`), then the per-principal and
 * per-service sets it needs. A delete reads the subscriptions' JSON first (for those two sets) and
 * the script checks it is unchanged (else the delete is read and run again).
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { storeUnavailable, whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import type { DisabledReason, FailingStreak, Recovery, StatusChange, Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

/** Where the store connects. */
export type RedisSubscriptionStoreOptions = RedisStoreOptions;

/** The keys (after the prefix) every script declares first, in this order: `k['sub:all']` in Lua is `KEYS[1]`. */
const FIXED = [
  'sub:all', 'sub:status', 'sub:seq', 'sub:number', 'sub:active', 'sub:failures', 'sub:failing-since', 'sub:disabled',
  'sub:secret', 'sub:previous-secret', 'sub:previous-secret:until', 'rec:all', 'rec:running', 'rec:lease',
] as const;

/** A script over the store's keys: `k[name]` is the declared key of `FIXED`'s `name`; further keys follow at `KEYS[#FIXED + 1]`. */
function script(lua: string): RedisScript {
  return new RedisScript(`local k = {}
for i, name in ipairs({'${FIXED.join("', '")}'}) do k[name] = KEYS[i] end
local extra = ${FIXED.length}
${lua}`);
}

/** The hashes of what changes after creation, keyed by subscription id. */
const STATE_HASHES = ['sub:failures', 'sub:failing-since', 'sub:disabled', 'sub:secret', 'sub:previous-secret'] as const;

/**
 * ARGV: prefix, id, JSON, status, principal, serviceId ('' = none), then the state as created
 * (failures, failing since, disabled, previous secret, its end; '' = none).
 */
const CREATE = script(`
local id = ARGV[2]
if redis.call('HEXISTS', k['sub:all'], id) == 1 then return 0 end
local seq = redis.call('INCR', k['sub:seq'])
redis.call('HSET', k['sub:all'], id, ARGV[3])
redis.call('HSET', k['sub:status'], id, ARGV[4])
redis.call('HSET', k['sub:number'], id, seq)
redis.call('ZADD', KEYS[extra + 1], seq, id)
if ARGV[4] == 'active' then redis.call('ZADD', k['sub:active'], seq, id) end
if ARGV[6] ~= '' then redis.call('SADD', KEYS[extra + 2], id) end
if ARGV[7] ~= '0' then
  redis.call('HSET', k['sub:failures'], id, ARGV[7])
  redis.call('HSET', k['sub:failing-since'], id, ARGV[8])
end
if ARGV[9] ~= '' then redis.call('HSET', k['sub:disabled'], id, ARGV[9]) end
if ARGV[10] ~= '' then
  redis.call('HSET', k['sub:previous-secret'], id, ARGV[10])
  redis.call('ZADD', k['sub:previous-secret:until'], ARGV[11], id)
end
return 1`);

/** ARGV: prefix, id, status, disabled ('{atMs} {reason}'). Returns 1 when the status changed. */
const SET_STATUS = script(`
local id = ARGV[2]
local seq = redis.call('HGET', k['sub:number'], id)
if not seq then return 0 end
if redis.call('HGET', k['sub:status'], id) == ARGV[3] then return 0 end
redis.call('HSET', k['sub:status'], id, ARGV[3])
if ARGV[3] == 'active' then
  redis.call('ZADD', k['sub:active'], seq, id)
  redis.call('HDEL', k['sub:disabled'], id)
  redis.call('HDEL', k['sub:failures'], id)
  redis.call('HDEL', k['sub:failing-since'], id)
else
  redis.call('ZREM', k['sub:active'], id)
  redis.call('HSET', k['sub:disabled'], id, ARGV[4])
end
return 1`);

/** ARGV: prefix, id, '1' succeeded or '0' failed, now (ms). Returns the streak {failures, since} (see \`recordAttempt\`), or nil. */
const RECORD_ATTEMPT = script(`
local id = ARGV[2]
if redis.call('HEXISTS', k['sub:number'], id) == 0 then return nil end
if ARGV[3] == '1' then
  local failures = redis.call('HGET', k['sub:failures'], id)
  if not failures then return nil end
  local since = redis.call('HGET', k['sub:failing-since'], id)
  redis.call('HDEL', k['sub:failures'], id)
  redis.call('HDEL', k['sub:failing-since'], id)
  return {tonumber(failures), since}
end
local failures = redis.call('HINCRBY', k['sub:failures'], id, 1)
redis.call('HSETNX', k['sub:failing-since'], id, ARGV[4])
return {failures, redis.call('HGET', k['sub:failing-since'], id)}`);

/** ARGV: prefix, id, new secret, end of the overlap (ms). The current secret (hash, else the JSON's) becomes the previous one. */
const ROTATE = script(`
local id = ARGV[2]
local json = redis.call('HGET', k['sub:all'], id)
if not json then return 0 end
local current = redis.call('HGET', k['sub:secret'], id)
if not current then
  local secret = cjson.decode(json).secret
  if type(secret) == 'string' then current = secret end
end
if current then
  redis.call('HSET', k['sub:previous-secret'], id, ARGV[4] .. ' ' .. current)
  redis.call('ZADD', k['sub:previous-secret:until'], ARGV[4], id)
else
  redis.call('HDEL', k['sub:previous-secret'], id)
  redis.call('ZREM', k['sub:previous-secret:until'], id)
end
redis.call('HSET', k['sub:secret'], id, ARGV[3])
return 1`);

/** ARGV: prefix, id, subscription id, JSON. Returns the id of the subscription's running recovery, or false when stored. */
const START_RECOVERY = script(`
local running = redis.call('HGET', k['rec:running'], ARGV[3])
if running then return running end
redis.call('HSET', k['rec:all'], ARGV[2], ARGV[4])
redis.call('HSET', k['rec:running'], ARGV[3], ARGV[2])
return false`);

/** ARGV: prefix, owner, now (ms), lease end (ms). Returns the JSON of the recovery leased, or false. */
const CLAIM_RECOVERY = script(`
for _, id in ipairs(redis.call('HVALS', k['rec:running'])) do
  local lease = redis.call('HGET', k['rec:lease'], id)
  if not lease or tonumber(string.match(lease, '^(%d+)')) <= tonumber(ARGV[3]) then
    redis.call('HSET', k['rec:lease'], id, ARGV[4] .. ' ' .. ARGV[2])
    return redis.call('HGET', k['rec:all'], id)
  end
end
return false`);

/** ARGV: prefix, id, owner, JSON, lease end (ms) or '' to release, '1' when no longer running, subscription id. Returns 1 when written. */
const SAVE_RECOVERY = script(`
local id = ARGV[2]
local lease = redis.call('HGET', k['rec:lease'], id)
if not lease or string.sub(lease, string.find(lease, ' ') + 1) ~= ARGV[3] then return 0 end
redis.call('HSET', k['rec:all'], id, ARGV[4])
if ARGV[5] == '' then redis.call('HDEL', k['rec:lease'], id) else redis.call('HSET', k['rec:lease'], id, ARGV[5] .. ' ' .. ARGV[3]) end
if ARGV[6] == '1' and redis.call('HGET', k['rec:running'], ARGV[7]) == id then redis.call('HDEL', k['rec:running'], ARGV[7]) end
return 1`);

/** ARGV: prefix, now (ms). Returns how many previous secrets were deleted. */
const DROP_EXPIRED_SECRETS = script(`
local ids = redis.call('ZRANGEBYSCORE', k['sub:previous-secret:until'], '-inf', ARGV[2])
for _, id in ipairs(ids) do
  redis.call('HDEL', k['sub:previous-secret'], id)
  redis.call('ZREM', k['sub:previous-secret:until'], id)
end
return #ids`);

/**
 * ARGV: prefix, then per subscription its id and its JSON as read before; KEYS after `FIXED`: per
 * subscription its principal's set and its service's set (the principal's again when it has none).
 * Returns the ids deleted, or false (nothing deleted) when a JSON changed since it was read.
 */
const DELETE = script(`
for i = 2, #ARGV, 2 do
  local json = redis.call('HGET', k['sub:all'], ARGV[i])
  if json and json ~= ARGV[i + 1] then return false end
end
local deleted = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  if redis.call('HGET', k['sub:all'], id) then
    local sub = cjson.decode(ARGV[i + 1])
    local principal = KEYS[extra + i - 1]
    redis.call('HDEL', k['sub:all'], id)
    redis.call('HDEL', k['sub:status'], id)
    redis.call('HDEL', k['sub:number'], id)
    redis.call('ZREM', k['sub:active'], id)
    redis.call('ZREM', principal, id)
    redis.call('ZREM', k['sub:previous-secret:until'], id)
    for _, hash in ipairs({'${STATE_HASHES.join("', '")}'}) do redis.call('HDEL', k[hash], id) end
    if type(sub.serviceId) == 'string' then redis.call('SREM', KEYS[extra + i], id) end
    table.insert(deleted, id)
  end
end
return deleted`);

const STORE = 'the subscription store (Redis)';

/** Runs of `DELETE` at most for one delete (each after another replica changed a subscription it deletes). */
const DELETE_TRIES = 8;

/** A `SubscriptionStore` on Redis. */
export class RedisSubscriptionStore implements SubscriptionStore {
  readonly #options: RedisSubscriptionStoreOptions;
  readonly #p: string;
  /** `FIXED` under the prefix: the first keys of every script. */
  readonly #fixed: string[];
  #client: Redis | undefined;

  constructor(options: RedisSubscriptionStoreOptions) {
    this.#options = options;
    this.#p = options.prefix;
    this.#fixed = FIXED.map((name) => `${options.prefix}${name}`);
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
    const sets = [this.#principalKey(subscription.principal), this.#serviceKey(subscription.serviceId ?? '')];
    const created = await this.#run(CREATE, [JSON.stringify(rest), status, subscription.principal, subscription.serviceId ?? '', ...state], subscription.id, sets);
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
    return Number(await whileRedisAnswers(STORE, () => DROP_EXPIRED_SECRETS.run(client, this.#fixed, [this.#p, String(nowMs)])));
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
    const json = await whileRedisAnswers(STORE, () => CLAIM_RECOVERY.run(client, this.#fixed, [this.#p, owner, String(nowMs), String(nowMs + leaseMs)]));
    return typeof json === 'string' ? (JSON.parse(json) as Recovery) : undefined;
  }

  async saveRecovery(recovery: Recovery, owner: string, nowMs: number, leaseMs: number, release = false): Promise<boolean> {
    const done = recovery.status !== 'running';
    const leaseEnd = release || done ? '' : String(nowMs + leaseMs);
    const saved = await this.#run(SAVE_RECOVERY, [owner, JSON.stringify(recovery), leaseEnd, done ? '1' : '0', recovery.subscriptionId], recovery.id);
    return saved === 1;
  }

  async delete(id: string): Promise<boolean> {
    return (await this.#delete([id])).length === 1;
  }

  async deleteByService(serviceId: string): Promise<string[]> {
    const client = this.#connected();
    const ids = await whileRedisAnswers(STORE, () => client.smembers(`${this.#p}sub:service:${serviceId}`));
    return this.#delete(ids);
  }

  /**
   * DELETE of `ids`: their JSON read first (for their principal's and service's sets), run again if
   * one changed meanwhile, `DELETE_TRIES` times at most (then 503: other replicas kept changing them).
   */
  async #delete(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const client = this.#connected();
    for (let tries = 0; tries < DELETE_TRIES; tries++) {
      const rows = await whileRedisAnswers(STORE, () => client.hmget(`${this.#p}sub:all`, ...ids));
      const args: string[] = [];
      const sets: string[] = [];
      rows.forEach((row, i) => {
        if (row === null) return;
        const { principal, serviceId } = JSON.parse(row) as Pick<Subscription, 'principal' | 'serviceId'>;
        args.push(ids[i]!, row);
        sets.push(this.#principalKey(principal), typeof serviceId === 'string' ? this.#serviceKey(serviceId) : this.#principalKey(principal));
      });
      if (args.length === 0) return [];
      const deleted = (await whileRedisAnswers(STORE, () => DELETE.run(client, [...this.#fixed, ...sets], [this.#p, ...args]))) as string[] | null;
      if (deleted !== null) return deleted;
    }
    throw storeUnavailable(STORE, 'other replicas kept changing the subscriptions while this one deleted them');
  }

  #principalKey(principal: string): string {
    return `${this.#p}sub:principal:${principal}`;
  }

  #serviceKey(serviceId: string): string {
    return `${this.#p}sub:service:${serviceId}`;
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

  /** Runs a script with KEYS `FIXED` then `extra`, ARGV prefix, id, ...args. */
  async #run(script: RedisScript, args: string[], id: string, extra: string[] = []): Promise<unknown> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => script.run(client, [...this.#fixed, ...extra], [this.#p, id, ...args]));
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
