/**
 * A `SubscriptionStore` that hands every call to another one: the base of the stores that change a
 * few calls of the one they wrap (`SealedSubscriptionStore` seals secrets, `CachedSubscriptionStore`
 * keeps reads) and pass the rest through as they are.
 */
import type { FailingStreak, Recovery, StatusChange, Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

/** Every call handed to `inner`; a subclass overrides the ones it changes. */
export class SubscriptionStoreDecorator implements SubscriptionStore {
  protected readonly inner: SubscriptionStore;

  constructor(inner: SubscriptionStore) {
    this.inner = inner;
  }

  open(): Promise<void> {
    return this.inner.open();
  }

  create(subscription: Subscription): Promise<void> {
    return this.inner.create(subscription);
  }

  get(id: string): Promise<Subscription | undefined> {
    return this.inner.get(id);
  }

  listByPrincipal(principal: string): Promise<Subscription[]> {
    return this.inner.listByPrincipal(principal);
  }

  listActive(): Promise<Subscription[]> {
    return this.inner.listActive();
  }

  setStatus(id: string, status: SubscriptionStatus, change: StatusChange): Promise<boolean> {
    return this.inner.setStatus(id, status, change);
  }

  recordAttempt(id: string, succeeded: boolean, nowMs: number): Promise<FailingStreak | undefined> {
    return this.inner.recordAttempt(id, succeeded, nowMs);
  }

  rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    return this.inner.rotateSecret(id, secret, previousUntilMs);
  }

  dropExpiredSecrets(nowMs: number): Promise<number> {
    return this.inner.dropExpiredSecrets(nowMs);
  }

  startRecovery(recovery: Recovery): Promise<string | undefined> {
    return this.inner.startRecovery(recovery);
  }

  getRecovery(id: string): Promise<Recovery | undefined> {
    return this.inner.getRecovery(id);
  }

  claimRecovery(owner: string, nowMs: number, leaseMs: number): Promise<Recovery | undefined> {
    return this.inner.claimRecovery(owner, nowMs, leaseMs);
  }

  saveRecovery(recovery: Recovery, owner: string, nowMs: number, leaseMs: number, release?: boolean): Promise<boolean> {
    return this.inner.saveRecovery(recovery, owner, nowMs, leaseMs, release);
  }

  delete(id: string): Promise<boolean> {
    return this.inner.delete(id);
  }

  deleteByService(serviceId: string): Promise<string[]> {
    return this.inner.deleteByService(serviceId);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
