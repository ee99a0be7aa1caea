/**
 * Webhook secrets encrypted at rest (`webhooks.secretKey`): AES-256-GCM with a fresh 96-bit IV per
 * secret (NIST SP 800-38D), the subscription id as additional authenticated data (a sealed secret
 * copied onto another row does not open), each sealed value tagged with the id of the key that
 * sealed it. Keys listed in `webhooks.previousSecretKeys` still open what they sealed, so rotating
 * is: put a new key in `secretKey`, move the old one to `previousSecretKeys`; rows written before
 * stay readable, new rows use the new key.
 *
 * `SealedSubscriptionStore` wraps any `SubscriptionStore` (memory, sqlite, redis): it seals on the
 * way in and opens on the way out, so no adapter ever holds a secret in plain text and every reader
 * above it (fan-out, deliveries) sees the plain secret it signs with.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Subscription, SubscriptionStore } from './SubscriptionStore.ts';
import { SubscriptionStoreDecorator } from './subscription-store-decorator.ts';

/** Length of a key, bytes (AES-256). */
export const SECRET_KEY_BYTES = 32;

/** The prefix of a sealed secret: `pgwsec1.<key id>.<iv>.<ciphertext>.<tag>` (base64url parts). */
const SEALED_PREFIX = 'pgwsec1.';

/** The id a key is known by in sealed values: the first 8 hex digits of its SHA-256. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** A key from its base64 form; throws when it is not `SECRET_KEY_BYTES` bytes. */
export function decodeSecretKey(base64: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== SECRET_KEY_BYTES || key.toString('base64').replace(/=+$/, '') !== base64.trim().replace(/=+$/, '')) {
    throw new Error(`must be ${SECRET_KEY_BYTES} random bytes in base64 (e.g. openssl rand -base64 32)`);
  }
  return key;
}

/** Seals and opens webhook secrets with the current key; opens with previous keys too. */
export class SecretBox {
  readonly #current: { id: string; key: Buffer };
  readonly #byId: Map<string, Buffer>;

  constructor(current: Buffer, previous: Buffer[] = []) {
    this.#current = { id: keyId(current), key: current };
    this.#byId = new Map([...previous, current].map((key) => [keyId(key), key]));
  }

  /** `secret` sealed for the row `subscriptionId`. */
  seal(secret: string, subscriptionId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv).setAAD(Buffer.from(subscriptionId));
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return `${SEALED_PREFIX}${[this.#current.id, iv, sealed, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')}`;
  }

  /** The secret in `stored`: opened when sealed (throws when its key is unknown or it was tampered with), as is when written before encryption was on. */
  open(stored: string, subscriptionId: string): string {
    if (!stored.startsWith(SEALED_PREFIX)) return stored;
    const [id, iv, sealed, tag] = stored.slice(SEALED_PREFIX.length).split('.');
    const key = this.#byId.get(id);
    if (!key) throw new Error(`webhook secret sealed with key ${id}, which is neither webhooks.secretKey nor in webhooks.previousSecretKeys`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url')).setAAD(Buffer.from(subscriptionId));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** A `SubscriptionStore` whose adapter only ever sees sealed secrets. */
export class SealedSubscriptionStore extends SubscriptionStoreDecorator {
  readonly #box: SecretBox;

  constructor(inner: SubscriptionStore, box: SecretBox) {
    super(inner);
    this.#box = box;
  }

  override create(subscription: Subscription): Promise<void> {
    const sealed = { ...subscription };
    if (subscription.secret !== undefined) sealed.secret = this.#box.seal(subscription.secret, subscription.id);
    if (subscription.previousSecret !== undefined) sealed.previousSecret = { ...subscription.previousSecret, secret: this.#box.seal(subscription.previousSecret.secret, subscription.id) };
    return this.inner.create(sealed);
  }

  override async get(id: string): Promise<Subscription | undefined> {
    const found = await this.inner.get(id);
    return found && this.#opened(found);
  }

  override async listByPrincipal(principal: string): Promise<Subscription[]> {
    return (await this.inner.listByPrincipal(principal)).map((s) => this.#opened(s));
  }

  override async listActive(): Promise<Subscription[]> {
    return (await this.inner.listActive()).map((s) => this.#opened(s));
  }

  /** The new secret is sealed; the current one moves to the previous slot as sealed (same row, same additional data). */
  override rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    return this.inner.rotateSecret(id, this.#box.seal(secret, id), previousUntilMs);
  }

  #opened(subscription: Subscription): Subscription {
    const opened = { ...subscription };
    if (subscription.secret !== undefined) opened.secret = this.#box.open(subscription.secret, subscription.id);
    if (subscription.previousSecret !== undefined) opened.previousSecret = { ...subscription.previousSecret, secret: this.#box.open(subscription.previousSecret.secret, subscription.id) };
    return opened;
  }
}
