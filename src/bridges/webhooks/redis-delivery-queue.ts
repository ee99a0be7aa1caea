/**
 * The webhook delivery queue on Redis (`storage.driver: redis`), shared by every replica on one
 * prefix. Each delivery is a hash `P dq:d:{id}`. Per subscription: `P dq:due:{sub}` its pending
 * deliveries and `P dq:lease:{sub}` its in-flight ones, sorted sets (by next attempt, resp. lease
 * end) of members `{seq16}|{id}` (ties order by enqueue order), and `P dq:sub:{sub}` its ids by seq.
 * The due index is `P dq:ready`: subscriptions by when they can next give work (`DeliveryQueue`), so
 * a claim reads ready subscriptions and seeks into each, never walking a backlog. Also `P dq:succeeded`
 * and `P dq:dead` (by finish time), `P dq:n` (pending and in-flight counts) and `P dq:seq`.
 *
 * Every state change is one Lua script (`redis-delivery-scripts.ts`), so a claim is atomic across
 * replicas: of two replicas claiming at once, never both get one delivery, and the
 * `PER_SUBSCRIPTION` cap holds for both together. A killed replica's claims come back when their
 * lease ends. Every script declares every key it touches (ready for a Redis Cluster), so the keys a
 * script will need are read first: a claim reads the ready subscriptions and their first due and
 * ended-lease deliveries, a finish the subscription of each delivery (known from the claim in this
 * process), a delete or purge the deliveries it will delete. The script works on what it is given
 * and stops at what it was not (another replica changed the queue meanwhile); the queue then reads
 * again and runs the rest, a few times at most.
 *
 * Every time the queue keeps (due times, lease ends, created and updated times) is in Redis's clock
 * (`RedisClock`, learnt from `TIME` at open and in every claim): a replica whose clock runs ahead
 * never takes another's live lease for ended, and all replicas list the same times. Callers pass
 * and get back times of their own clock.
 */
import type { Redis } from 'ioredis';
import { RedisClock } from '../../storage/redis-clock.ts';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import type { RedisScript } from '../../storage/redis-script.ts';
import {
  DELIVERY_STATUSES,
  PER_SUBSCRIPTION,
  releaseByFinish,
  zeroCounts,
  type ClaimedDelivery,
  type ClaimRef,
  type Delivery,
  type DeliveryPage,
  type DeliveryQueue,
  type DeliveryStatus,
  type FinishedAttempt,
  type NewDelivery,
  type PurgeLimits,
  type Redelivery,
  type Settlement,
} from './DeliveryQueue.ts';
import { CLAIM, DELETE_OF, ENQUEUE, FINISH, FIXED, MIGRATE, PURGE, REDELIVER, SETTLE, subscriptionKeys } from './redis-delivery-scripts.ts';

/** Where the queue connects. */
export interface RedisDeliveryQueueOptions extends RedisStoreOptions {
  /** This process's clock, epoch ms, translated into Redis's for every stored time; default `Date.now` (tests skew it). */
  clock?: () => number;
}

const STORE = 'the delivery queue (Redis)';

/** Runs of a script that stopped at something it was not given (read again in between), at most. */
const TRIES = 8;

/** Deliveries one delete or purge script is given at most. */
const BATCH = 500;

/** Deliveries claimed by this process whose subscription it remembers (for their finish), at most. */
const REMEMBERED = 100_000;

/** The keys and the deliveries and subscriptions a script is given (see `redis-delivery-scripts.ts`). */
interface Declared {
  ids: string[];
  subs: string[];
}

/** A `DeliveryQueue` on Redis. */
export class RedisDeliveryQueue implements DeliveryQueue {
  readonly #options: RedisDeliveryQueueOptions;
  readonly #p: string;
  readonly #clock: RedisClock;
  readonly #fixed: string[];
  /** The subscription of each delivery this process claimed and has not finished. */
  readonly #subscriptionOf = new Map<string, string>();
  #client: Redis | undefined;

  constructor(options: RedisDeliveryQueueOptions) {
    this.#options = options;
    this.#p = options.prefix;
    this.#clock = new RedisClock(options.clock);
    this.#fixed = FIXED.map((name) => `${options.prefix}${name}`);
  }

  /** Connects, learns Redis's clock, and moves a queue written before leased claims into the current layout. Idempotent. */
  async open(): Promise<void> {
    if (this.#client) return;
    const { clock: _clock, ...options } = this.#options;
    const client = await connectStore(options);
    this.#client = client;
    try {
      await this.#clock.measure(() => client.time(), true);
      await this.#migrate();
    } catch (err) {
      this.#client = undefined;
      await closeRedis(client);
      throw err;
    }
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    if (deliveries.length === 0) return 0;
    const args = deliveries.flatMap((d) => [d.id, d.subscriptionId, d.eventId, d.eventType, d.payload, this.#clock.toRedis(d.nextAttemptMs)]);
    const declared = { ids: deliveries.map((d) => d.id), subs: deliveries.map((d) => d.subscriptionId) };
    return Number(await this.#run(ENQUEUE, this.#clock.toRedis(nowMs), declared, args));
  }

  async claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    return this.#claim(this.#clock.toRedis(nowMs), Math.floor(limit), leaseMs);
  }

  async finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]> {
    if (attempts.length === 0) return [];
    return this.#finish(attempts, this.#clock.toRedis(nowMs));
  }

  async settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
    const now = this.#clock.toRedis(nowMs);
    const wanted = Math.max(0, Math.floor(limit));
    const ids = attempts.map((a) => a.id);
    const subs = await this.#subscriptionsOf(ids);
    const lanes = wanted > 0 ? await this.#candidates(now, wanted, subs) : { ids: [], subs: [] };
    const before = this.#clock.now();
    const [recorded, claimed, complete, seconds, micros] = (await this.#run(SETTLE, now, { ids: [...ids, ...lanes.ids], subs: [...subs, ...lanes.subs] }, [
      wanted, leaseMs, ...this.#attemptArgs(attempts),
    ])) as [number[], unknown, number, string, string];
    this.#learn(seconds, micros, before);
    const results = await this.#finishRest(attempts, now, recorded.map(Number));
    const got = this.#claimed(claimed);
    if (complete === 0 && got.length < wanted) got.push(...(await this.#claim(now, wanted - got.length, leaseMs)));
    return { recorded: results, claimed: got };
  }

  release(claims: ClaimRef[], nowMs: number): Promise<number> {
    return releaseByFinish(this, claims, nowMs);
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    const declared = { ids: [id], subs: [subscriptionId] };
    const [outcome, ...fields] = (await this.#run(REDELIVER, this.#clock.toRedis(nowMs), declared, [subscriptionId, id])) as string[];
    if (outcome === 'absent') return { outcome };
    return { outcome: outcome as 'redelivered' | 'busy', delivery: this.#delivery(fields) };
  }

  async nextDueMs(): Promise<number | undefined> {
    const client = this.#connected();
    const first = await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}dq:ready`, '0', '0', 'WITHSCORES'));
    return first.length === 0 ? undefined : this.#clock.fromRedis(Number(first[1]));
  }

  cancelPending(subscriptionId: string): Promise<number> {
    return this.#deleteOf(subscriptionId, true);
  }

  deleteSubscription(subscriptionId: string): Promise<number> {
    return this.#deleteOf(subscriptionId, false);
  }

  async get(subscriptionId: string, id: string): Promise<Delivery | undefined> {
    const client = this.#connected();
    const row = await whileRedisAnswers(STORE, () => client.hgetall(this.#deliveryKey(id)));
    return row.id !== undefined && row.subscriptionId === subscriptionId ? this.#delivery(Object.entries(row).flat()) : undefined;
  }

  async list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage> {
    const client = this.#connected();
    const wanted = options.limit + 1;
    const batch = options.status ? 200 : wanted;
    const rows: Array<Record<string, string>> = [];
    for (let offset = 0; rows.length < wanted; offset += batch) {
      const ids = await whileRedisAnswers(STORE, () => client.zrangebyscore(`${this.#p}dq:sub:${subscriptionId}`, `(${options.after}`, '+inf', 'LIMIT', offset, batch));
      const found = await whileRedisAnswers(STORE, () => Promise.all(ids.map((id) => client.hgetall(this.#deliveryKey(id)))));
      rows.push(...found.filter((row) => row.id !== undefined && (!options.status || row.status === options.status)));
      if (ids.length < batch) break;
    }
    const deliveries = rows.slice(0, options.limit).map((row) => this.#delivery(Object.entries(row).flat()));
    return rows.length > options.limit && deliveries.length > 0 ? { deliveries, next: deliveries[deliveries.length - 1]!.seq } : { deliveries };
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const client = this.#connected();
    const p = this.#p;
    const [[pending, inFlight], succeeded, dead] = await whileRedisAnswers(STORE, () =>
      Promise.all([client.hmget(`${p}dq:n`, 'pending', 'in-flight'), client.zcard(`${p}dq:succeeded`), client.zcard(`${p}dq:dead`)]),
    );
    return { ...zeroCounts(), pending: Number(pending ?? 0), 'in-flight': Number(inFlight ?? 0), succeeded, dead };
  }

  async unfinished(): Promise<number> {
    const client = this.#connected();
    const [pending, inFlight] = await whileRedisAnswers(STORE, () => client.hmget(`${this.#p}dq:n`, 'pending', 'in-flight'));
    return Number(pending ?? 0) + Number(inFlight ?? 0);
  }

  async purge(limits: PurgeLimits): Promise<number> {
    const client = this.#connected();
    const [succeeded, dead] = [`${this.#p}dq:succeeded`, `${this.#p}dq:dead`];
    const [succeededBefore, deadBefore, maxDead] = [this.#clock.toRedis(limits.succeededBeforeMs), this.#clock.toRedis(limits.deadBeforeMs), Math.max(0, limits.maxDead)];
    return (
      (await this.#purge('succeeded', succeededBefore, () => client.zrangebyscore(succeeded, '-inf', `(${succeededBefore}`, 'LIMIT', 0, BATCH))) +
      (await this.#purge('dead', deadBefore, () => client.zrangebyscore(dead, '-inf', `(${deadBefore}`, 'LIMIT', 0, BATCH))) +
      (await this.#purge('excess', maxDead, async () => {
        const excess = (await client.zcard(dead)) - maxDead;
        return excess > 0 ? client.zrange(dead, '0', String(Math.min(excess, BATCH) - 1)) : [];
      }))
    );
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    this.#subscriptionOf.clear();
    if (client) await closeRedis(client);
  }

  /** Claims up to `limit` at `now` (Redis's clock): reads the keys the claim will need, runs it, and claims the rest if it stopped at one it was not given. */
  async #claim(now: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const out: ClaimedDelivery[] = [];
    for (let tries = 0; tries < TRIES && out.length < limit; tries++) {
      const declared = await this.#candidates(now, limit - out.length, []);
      if (declared.subs.length === 0) break;
      const before = this.#clock.now();
      const [claimed, complete, seconds, micros] = (await this.#run(CLAIM, now, declared, [limit - out.length, leaseMs])) as [unknown, number, string, string];
      this.#learn(seconds, micros, before);
      out.push(...this.#claimed(claimed));
      if (complete === 1) break;
    }
    return out;
  }

  /**
   * What a claim of up to `limit` at `now` will touch: the subscriptions ready by `now` (and `known`
   * ones, whose slots a finish in the same script may free) with their first ended leases and due
   * deliveries, as many as the claim could take from each.
   */
  async #candidates(now: number, limit: number, known: string[]): Promise<Declared> {
    const client = this.#connected();
    const take = Math.min(PER_SUBSCRIPTION, limit);
    const firstOf = (subs: string[]) => Promise.all(subs.flatMap((sub) => {
      const [due, lease] = subscriptionKeys(sub).map((key) => `${this.#p}${key}`);
      return [client.zrangebyscore(lease!, '-inf', now, 'LIMIT', 0, take), client.zrangebyscore(due!, '-inf', now, 'LIMIT', 0, take)];
    }));
    const [lanes, knownFirst] = await whileRedisAnswers(STORE, () => Promise.all([client.zrangebyscore(`${this.#p}dq:ready`, '-inf', now, 'LIMIT', 0, limit), firstOf(known)]));
    const more = lanes.filter((sub) => !known.includes(sub));
    const moreFirst = more.length > 0 ? await whileRedisAnswers(STORE, () => firstOf(more)) : [];
    return { ids: [...knownFirst, ...moreFirst].flat().map(idOf), subs: [...known, ...more] };
  }

  /** Records `attempts` at `now` (Redis's clock). */
  #finish(attempts: FinishedAttempt[], now: number): Promise<boolean[]> {
    return this.#finishRest(attempts, now, attempts.map(() => -1));
  }

  /** Records the attempts whose result is -1 (not yet run, or their subscription was not given), reading their subscription afresh after the first run. */
  async #finishRest(attempts: FinishedAttempt[], now: number, results: number[], tries = TRIES): Promise<boolean[]> {
    const open = attempts.flatMap((_, i) => (results[i] === -1 ? [i] : []));
    if (open.length > 0 && tries > 0) {
      const todo = open.map((i) => attempts[i]!);
      const ids = todo.map((a) => a.id);
      const subs = await this.#subscriptionsOf(ids, tries < TRIES || open.length < attempts.length);
      const reply = (await this.#run(FINISH, now, { ids, subs }, this.#attemptArgs(todo))) as number[];
      open.forEach((i, j) => { results[i] = Number(reply[j]); });
      return this.#finishRest(attempts, now, results, tries - 1);
    }
    attempts.forEach((a, i) => { if (results[i] !== -1) this.#subscriptionOf.delete(a.id); });
    return results.map((r) => r === 1);
  }

  /** The subscriptions of deliveries `ids`: remembered from their claim, else (or when `fresh`) read. */
  async #subscriptionsOf(ids: string[], fresh = false): Promise<string[]> {
    const unknown = fresh ? ids : ids.filter((id) => !this.#subscriptionOf.has(id));
    const read = await this.#readSubscriptions(unknown);
    return [...ids.filter((id) => !unknown.includes(id)).map((id) => this.#subscriptionOf.get(id)!), ...read];
  }

  /** The subscriptions of the deliveries `ids` as stored (none for one that is gone). */
  async #readSubscriptions(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const client = this.#connected();
    const subs = await whileRedisAnswers(STORE, () => Promise.all(ids.map((id) => client.hget(this.#deliveryKey(id), 'subscriptionId'))));
    return subs.filter((sub): sub is string => sub !== null);
  }

  /** Deletes a subscription's pending deliveries (`onlyPending`) or all of them, `BATCH` at a time, each batch read first. */
  async #deleteOf(sub: string, onlyPending: boolean): Promise<number> {
    const client = this.#connected();
    const [due, , all] = subscriptionKeys(sub).map((key) => `${this.#p}${key}`);
    let deleted = 0;
    for (;;) {
      const read = await whileRedisAnswers(STORE, () => client.zrange(onlyPending ? due! : all!, '0', String(BATCH - 1)));
      if (read.length === 0) return deleted;
      const declared = { ids: onlyPending ? read.map(idOf) : read, subs: [sub] };
      const [n, dropped] = (await this.#run(DELETE_OF, this.#clock.toRedis(this.#clock.now()), declared, [sub, onlyPending ? '1' : '', ...read])) as [number, number];
      deleted += n;
      if (n + dropped === 0) return deleted;
    }
  }

  /** Deletes, `BATCH` at a time, the finished deliveries `read` finds (`which` and `bound` as `PURGE` takes them), each checked again in the script. */
  async #purge(which: 'succeeded' | 'dead' | 'excess', bound: number, read: () => Promise<string[]>): Promise<number> {
    let removed = 0;
    for (;;) {
      const members = await whileRedisAnswers(STORE, read);
      if (members.length === 0) return removed;
      const ids = members.map(idOf);
      const n = Number(await this.#run(PURGE, 0, { ids, subs: await this.#readSubscriptions(ids) }, [which, bound, ...members]));
      removed += n;
      if (n === 0) return removed;
    }
  }

  /** Moves a queue written before leased claims (`MIGRATE`), its deliveries and their subscriptions read first. */
  async #migrate(): Promise<void> {
    const client = this.#connected();
    for (let tries = 0; tries < TRIES; tries++) {
      const [pending, inflight] = await whileRedisAnswers(STORE, () => Promise.all([client.zrange(`${this.#p}dq:pending`, '0', '-1'), client.smembers(`${this.#p}dq:inflight`)]));
      if (pending.length === 0 && inflight.length === 0) return;
      const ids = [...pending.map(idOf), ...inflight];
      if (Number(await this.#run(MIGRATE, this.#clock.toRedis(this.#clock.now()), { ids, subs: await this.#readSubscriptions(ids) }, [])) >= 0) return;
    }
    throw new Error('the delivery queue written before leased claims kept changing while it was moved');
  }

  /** Runs `script` at `now` (Redis's clock) with the fixed keys, the `declared` deliveries' and subscriptions' keys, then `args`. */
  async #run(script: RedisScript, now: number, declared: Declared, args: Array<string | number>): Promise<unknown> {
    const client = this.#connected();
    const ids = [...new Set(declared.ids)];
    const subs = [...new Set(declared.subs)];
    const keys = [...this.#fixed, ...ids.map((id) => this.#deliveryKey(id)), ...subs.flatMap((sub) => subscriptionKeys(sub).map((key) => `${this.#p}${key}`))];
    return whileRedisAnswers(STORE, () => script.run(client, keys, [now, ids.length, ...ids, subs.length, ...subs, ...args]));
  }

  #deliveryKey(id: string): string {
    return `${this.#p}dq:d:${id}`;
  }

  /** Learns the clock offset from a script's `TIME` (read between `before` and now, this process's clock). */
  #learn(seconds: string, micros: string, before: number): void {
    this.#clock.observe(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), before, this.#clock.now());
  }

  /** The script arguments of finished attempts (see `FINISH_FN`), their next attempt in Redis's clock. */
  #attemptArgs(attempts: FinishedAttempt[]): Array<string | number> {
    return attempts.flatMap(({ id, claim, outcome }) => [
      id, claim, outcome.status, outcome.nextAttemptMs === undefined ? '' : this.#clock.toRedis(outcome.nextAttemptMs),
      outcome.uncount ? '1' : '', outcome.lastError ?? '', outcome.lastStatus ?? '',
    ]);
  }

  /** `claimUpTo`'s reply as `claim` answers, in this process's clock; remembers each one's subscription for its finish. */
  #claimed(reply: unknown): ClaimedDelivery[] {
    if (this.#subscriptionOf.size > REMEMBERED) this.#subscriptionOf.clear();
    return (reply as Array<[number, ...string[]]>).map(([reclaimed, ...fields]) => {
      const f = fieldsOf(fields);
      this.#subscriptionOf.set(f.id!, f.subscriptionId!);
      return { ...this.#delivery(fields), claim: Number(f.claim), leaseUntilMs: this.#clock.fromRedis(Number(f.leaseUntilMs)), reclaimed: reclaimed === 1 };
    });
  }

  /** A delivery from its hash fields, its times in this process's clock. */
  #delivery(fields: string[]): Delivery {
    const d = toDelivery(fields);
    const local = (ms: number) => this.#clock.fromRedis(ms);
    return { ...d, nextAttemptMs: local(d.nextAttemptMs), createdMs: local(d.createdMs), updatedMs: local(d.updatedMs) };
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisDeliveryQueue is not open');
    return this.#client;
  }
}

/** The delivery id of a member `{seq16}|{id}`. */
function idOf(member: string): string {
  return member.slice(17);
}

/** Hash fields (a flat name, value list) as a record. */
function fieldsOf(fields: string[]): Record<string, string> {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  return f;
}

/** A delivery from its hash fields (a flat name, value list). */
function toDelivery(fields: string[]): Delivery {
  const f = fieldsOf(fields);
  const status = f.status as DeliveryStatus;
  if (!DELIVERY_STATUSES.includes(status)) throw new Error(`delivery ${f.id} has an unknown status`);
  return {
    id: f.id!, subscriptionId: f.subscriptionId!, eventId: f.eventId!, eventType: f.eventType!, payload: f.payload!,
    nextAttemptMs: Number(f.nextAttemptMs), seq: Number(f.seq), status, attempts: Number(f.attempts),
    createdMs: Number(f.createdMs), updatedMs: Number(f.updatedMs),
    ...(f.lastError !== undefined && { lastError: f.lastError }),
    ...(f.lastStatus !== undefined && { lastStatus: Number(f.lastStatus) }),
  };
}
