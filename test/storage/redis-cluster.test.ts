/**
 * Redis Cluster (issue 23, item 9): every Redis store's contract suite, unchanged, against a local
 * three-master cluster (`storage.redis.cluster`), each store under a fresh prefix made a hash tag
 * (`taggedPrefix`) as the gateway makes `storage.prefix`. The cluster is started by the suite from
 * `redis-server` processes and disposed with its keys afterwards. Plus what a cluster needs beyond
 * the contracts: the live tail across two logs (the blocking stream read follows the slot), and
 * the alias notices over pub/sub.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../src/bridges/a2a/redis-task-store.ts';
import { RedisFollowStore } from '../../src/bridges/mcp/redis-follow-store.ts';
import { RedisDeliveryQueue } from '../../src/bridges/webhooks/redis-delivery-queue.ts';
import { RedisDeliveryRateLimit } from '../../src/bridges/webhooks/redis-delivery-rate-limit.ts';
import { RedisSubscriptionStore } from '../../src/bridges/webhooks/redis-subscription-store.ts';
import { RedisCommandStore } from '../../src/commands/redis-store.ts';
import { RedisEventLog } from '../../src/log/redis.ts';
import { RedisRegistryStore } from '../../src/registry/redis-registry-store.ts';
import { taggedPrefix, type RedisStoreOptions } from '../../src/storage/redis.ts';
import { taskStoreContract } from '../bridges/a2a/task-store-contract.ts';
import { followStoreContract } from '../bridges/mcp/follow-store-contract.ts';
import { deliveryQueueContract } from '../bridges/webhooks/delivery-queue-contract.ts';
import { deliveryRateLimitContract } from '../bridges/webhooks/delivery-rate-limit-contract.ts';
import { subscriptionStoreContract } from '../bridges/webhooks/subscription-store-contract.ts';
import { commandStoreContract, idempotencyContract, outboxContract } from '../commands/store-contract.ts';
import { eventLogContract } from '../log/contract.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';
import { registryStoreContract } from '../registry/store-contract.ts';
import { FAST_DISPATCH, ordersBackend, placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { onRedisCluster, randomPrefix, type LocalRedisCluster } from '../support/redis.ts';

/** Where a store of the test connects: the cluster, under `prefix` (a fresh tagged one by default). */
function on(cluster: LocalRedisCluster, prefix = taggedPrefix(randomPrefix())): RedisStoreOptions {
  return { url: cluster.url, prefix, cluster: cluster.nodes };
}

onRedisCluster((cluster) => {
  eventLogContract('redis cluster', () => new RedisEventLog(on(cluster())));
  idempotencyContract('redis cluster', () => new RedisCommandStore(on(cluster())));
  outboxContract('redis cluster', () => new RedisCommandStore(on(cluster())));
  commandStoreContract('redis cluster', () => new RedisCommandStore(on(cluster())));
  registryStoreContract('redis cluster', () => new RedisRegistryStore(on(cluster())));
  subscriptionStoreContract('redis cluster', () => new RedisSubscriptionStore(on(cluster())));
  deliveryQueueContract('redis cluster', () => new RedisDeliveryQueue(on(cluster())));
  deliveryRateLimitContract('redis cluster', () => new RedisDeliveryRateLimit(on(cluster())));
  followStoreContract('redis cluster', (limits) => new RedisFollowStore(on(cluster()), limits));
  taskStoreContract('redis cluster', (limits) => new RedisTaskStore(on(cluster()), limits));

  describe('a gateway on the cluster (storage.redis.cluster)', () => {
    afterEach(closeAll);

    it('starts ready, accepts a command (201), delivers it to the backend and answers its events from the log', async () => {
      const { url, nodes } = cluster();
      const orders = await scriptedBackend((_req, res) => sendJson(res, 201, {}));
      const seeds = nodes.map((node) => `{ host: ${node.host}, port: ${node.port} }`).join(', ');
      const gw = await startTestGateway(gatewayYaml(
        `${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}`,
        `storage: { driver: redis, url: "${url}", prefix: "${randomPrefix()}", redis: { cluster: [${seeds}] } }`,
      ));
      expect((await fetch(`${gw.url}readyz`)).status).toBe(200);
      const command = placeOrder();
      expect((await post(`${gw.url}commands`, command)).status).toBe(201);
      await eventually(() => orders.received.some((r) => r.method === 'POST'), 20_000);
      // The legacy backend's 201 becomes the command's success event in the log.
      const events = await eventually(async () => {
        const { body } = await getJson(`${gw.url}events?correlationId=${command.id}`);
        return body.events.length > 0 ? body.events : undefined;
      }, 20_000);
      expect(events[0]).toMatchObject({ correlationid: command.id });
    }, 60_000);
  });

  describe('across replicas on the cluster', () => {
    it('two logs on one prefix deliver each other\'s appends live (the blocking tail read follows the slot)', async () => {
      const options = on(cluster());
      const [a, b] = [new RedisEventLog(options), new RedisEventLog(options)];
      await a.open();
      await b.open();
      try {
        const seen: string[] = [];
        b.subscribe((events) => seen.push(...events.map((e) => e.event.id)));
        await a.append([{ event: cloudEvent('one') }, { event: cloudEvent('two') }]);
        await expect.poll(() => seen, { timeout: 20_000 }).toEqual(['one', 'two']);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('an alias one replica remembers is announced to the other (pub/sub on the cluster)', async () => {
      const options = on(cluster());
      const [a, b] = [new RedisCommandStore(options), new RedisCommandStore(options)];
      await a.open();
      await b.open();
      try {
        const heard: Array<[string, string]> = [];
        const stop = await b.watchAliases((id, alias) => heard.push([id, alias]));
        await a.rememberAlias('cmd-1', 'own-1');
        await expect.poll(() => heard, { timeout: 20_000 }).toEqual([['cmd-1', 'own-1']]);
        expect(await b.aliasesOf('cmd-1')).toEqual(['own-1']);
        stop();
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
});
