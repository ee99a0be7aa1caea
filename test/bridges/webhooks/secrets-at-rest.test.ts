import { randomBytes } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySubscriptionStore } from '../../../src/bridges/webhooks/memory-subscription-store.ts';
import { keyId, SealedSubscriptionStore, SecretBox } from '../../../src/bridges/webhooks/secret-box.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway, tempDir } from '../../support/gateway.ts';
import { appendEvents, startReceiver, subscribe, tableResolver, webhooksYaml } from './support.ts';
import { subscription, subscriptionStoreContract } from './subscription-store-contract.ts';

afterEach(closeAll);

const SECRET = 'whsec_dGhlIHNlY3JldCB0aGF0IG11c3QgbmV2ZXIgbGVhaw==';
const keyA = randomBytes(32);
const keyB = randomBytes(32);

subscriptionStoreContract('sealed (over memory)', () => new SealedSubscriptionStore(new MemorySubscriptionStore(), new SecretBox(keyA)));

describe('SecretBox', () => {
  it('seals with the current key, tagged with its id; opens with previous keys after a rotation; refuses tampering and unknown keys', () => {
    const sealed = new SecretBox(keyA).seal(SECRET, 'sub-1');
    expect(sealed).not.toContain(SECRET);
    expect(sealed.split('.')[1]).toBe(keyId(keyA));
    expect(new SecretBox(keyA).open(sealed, 'sub-1')).toBe(SECRET);
    expect(new SecretBox(keyB, [keyA]).open(sealed, 'sub-1')).toBe(SECRET);
    expect(() => new SecretBox(keyB).open(sealed, 'sub-1')).toThrow(/neither webhooks.secretKey nor/);
    // Bound to its row: the same sealed value on another subscription does not open.
    expect(() => new SecretBox(keyA).open(sealed, 'sub-2')).toThrow();
    expect(new SecretBox(keyA).open('plain-from-before', 'sub-1')).toBe('plain-from-before');
  });

  it('hands the adapter only sealed secrets and the readers the plain one', async () => {
    const inner = new MemorySubscriptionStore();
    const store = new SealedSubscriptionStore(inner, new SecretBox(keyA));
    await store.open();
    await store.create(subscription('s1', 'alice', { secret: SECRET }));
    expect((await inner.get('s1'))!.secret).toMatch(/^pgwsec1\./);
    expect((await store.get('s1'))!.secret).toBe(SECRET);
    expect((await store.listActive())[0].secret).toBe(SECRET);
  });
});

describe('webhooks.secretKey on a running gateway', () => {
  function yaml(path: string, keys: string) {
    return gatewayYaml(webhooksYaml('[100ms, 200ms]', keys), `storage: { driver: sqlite, path: ${path} }`);
  }

  it('stores the secret encrypted, signs deliveries with it, and still signs after a key rotation', async () => {
    const path = join(tempDir(), 'gateway.db');
    const resolver = tableResolver({ 'receiver.test': ['127.0.0.1'] });
    const receiver = await startReceiver();
    const first = await startTestGateway(yaml(path, `  secretKey: ${keyA.toString('base64')}\n`), {}, undefined, { resolver });
    expect((await subscribe(first, { webhook: { url: receiver.url(), secret: SECRET } })).status).toBe(201);
    const [one] = await appendEvents(first, 'OrderPlacedV1');
    await eventually(async () => receiver.requests.length === 1);
    expect((new Webhook(SECRET).verify(receiver.requests[0].body, receiver.requests[0].headers as Record<string, string>) as { id: string }).id).toBe(one);
    await first.close();

    const db = new DatabaseSync(path, { readOnly: true });
    const rows = db.prepare('SELECT * FROM webhook_subscriptions').all();
    db.close();
    expect(JSON.stringify(rows)).not.toContain(SECRET);
    expect(JSON.stringify(rows)).toContain(`pgwsec1.${keyId(keyA)}.`);

    const rotated = await startTestGateway(yaml(path, `  secretKey: ${keyB.toString('base64')}\n  previousSecretKeys: [${keyA.toString('base64')}]\n`), {}, undefined, { resolver });
    const [two] = await appendEvents(rotated, 'OrderPlacedV1');
    await eventually(async () => receiver.requests.length === 2);
    expect((new Webhook(SECRET).verify(receiver.requests[1].body, receiver.requests[1].headers as Record<string, string>) as { id: string }).id).toBe(two);
  });
});
