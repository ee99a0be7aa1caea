/**
 * The contract of the A2A task store port (the SDK's `TaskStore`, bounded and expiring), run by
 * every adapter's test file with a factory of fresh, unopened, empty stores.
 */
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { afterEach, describe, expect, it } from 'vitest';
import type { GatewayTaskStore, TaskStoreLimits } from '../../../src/bridges/a2a/open-task-store.ts';

/** A store of the port with its lifecycle. */
export type ContractTaskStore = GatewayTaskStore;

const T0 = Date.parse('2030-01-01T00:00:00Z');

/** A caller of `name` (the owner its tasks are scoped to). */
export function caller(name: string, tenant?: string): ServerCallContext {
  return new ServerCallContext({ user: { isAuthenticated: true, userName: name }, tenant });
}

/** A task `id` in `state`, its status at T0 + `atMs`, with one artifact carrying an event. */
export function task(id: string, state = TaskState.TASK_STATE_WORKING, atMs = 0, contextId = 'ctx-1'): Task {
  return {
    id,
    contextId,
    status: { state, message: undefined, timestamp: new Date(T0 + atMs).toISOString() },
    artifacts: [{
      artifactId: `evt-${id}`, name: 'OrderPlacedV1', description: '', metadata: undefined, extensions: [],
      parts: [{ content: { $case: 'data', value: { type: 'OrderPlacedV1', data: { qty: 2 } } }, metadata: undefined, filename: '', mediaType: 'application/json' }],
    }],
    history: [{
      messageId: `m-${id}`, contextId, taskId: id, role: Role.ROLE_USER, metadata: undefined, extensions: [], referenceTaskIds: [],
      parts: [{ content: { $case: 'text', value: 'hi' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    }],
    metadata: undefined,
  };
}

const LIST_ALL = { tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined, includeArtifacts: true };

/** Runs the task store contract against `make(limits)`. */
export function taskStoreContract(name: string, make: (limits: TaskStoreLimits) => ContractTaskStore): void {
  describe(`task store contract: ${name}`, () => {
    let now = T0;
    const open: ContractTaskStore[] = [];
    async function store(limits: Partial<TaskStoreLimits> = {}): Promise<ContractTaskStore> {
      now = T0;
      const s = make({ maxTasks: 100, ttlMs: 60_000, now: () => now, ...limits });
      await s.open();
      open.push(s);
      return s;
    }
    afterEach(async () => {
      while (open.length > 0) await open.pop()?.close();
    });

    it('loads what was saved, artifacts and history included; a later save replaces it', async () => {
      const s = await store();
      await s.save(task('t1'), caller('alice'));
      expect(await s.load('t1', caller('alice'))).toEqual(task('t1'));
      await s.save(task('t1', TaskState.TASK_STATE_COMPLETED, 5), caller('alice'));
      expect((await s.load('t1', caller('alice')))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(await s.load('nope', caller('alice'))).toBeUndefined();
    });

    it('scopes tasks to their owner and tenant', async () => {
      const s = await store();
      await s.save(task('t1'), caller('alice'));
      expect(await s.load('t1', caller('bob'))).toBeUndefined();
      expect(await s.load('t1', caller('alice', 'other'))).toBeUndefined();
      expect((await s.list(LIST_ALL, caller('bob'))).tasks).toEqual([]);
    });

    it('is bounded: beyond maxTasks the least recently saved task is dropped', async () => {
      const s = await store({ maxTasks: 2 });
      await s.save(task('a'), caller('alice'));
      await s.save(task('b'), caller('alice'));
      await s.save(task('a', TaskState.TASK_STATE_WORKING, 1), caller('alice'));
      await s.save(task('c'), caller('alice'));
      expect(await s.load('b', caller('alice'))).toBeUndefined();
      expect(await s.load('a', caller('alice'))).toBeDefined();
      expect(await s.load('c', caller('alice'))).toBeDefined();
    });

    it('never evicts another principal\'s task: a new task in a full store is refused 503 TASKS_EXHAUSTED with Retry-After, nothing stored', async () => {
      const s = await store({ maxTasks: 3, ttlMs: 10_000 });
      await s.save(task('b1'), caller('bob'));
      now = T0 + 1000;
      await s.save(task('b2'), caller('bob'));
      await s.save(task('c1'), caller('carol'));
      now = T0 + 2500;
      const refusal = await s.save(task('m1'), caller('mallory')).then(() => undefined, (err: unknown) => err);
      expect(refusal).toMatchObject({ code: 'TASKS_EXHAUSTED', status: 503, details: { limit: 'a2a.maxTasks', max: 3 } });
      // b1 is forgotten at T0 + 10 s: 7.5 s from now, so retry after 8.
      expect((refusal as { headers: Record<string, string> }).headers['Retry-After']).toBe('8');
      expect(await s.load('m1', caller('mallory'))).toBeUndefined();
      expect(await s.tasksOf(caller('mallory'))).toBe(0);
      for (const [id, who] of [['b1', 'bob'], ['b2', 'bob'], ['c1', 'carol']]) expect(await s.load(id, caller(who))).toBeDefined();
      // Updating a task already kept is never refused.
      await s.save(task('b1', TaskState.TASK_STATE_COMPLETED), caller('bob'));
      expect((await s.load('b1', caller('bob')))?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      // A caller with tasks of its own makes room from its own oldest, not another's.
      await s.save(task('c2'), caller('carol'));
      expect(await s.load('c1', caller('carol'))).toBeUndefined();
      expect(await s.load('c2', caller('carol'))).toBeDefined();
      expect(await s.tasksOf(caller('bob'))).toBe(2);
      // Once a task expires there is room again (b2 at T0 + 11 s, b1 updated at T0 + 2.5 s: 12.5 s).
      now = T0 + 11_000;
      await s.save(task('m1'), caller('mallory'));
      expect(await s.load('m1', caller('mallory'))).toBeDefined();
      expect(await s.load('b1', caller('bob'))).toBeDefined();
    });

    it('a full store refuses in another tenant too, and a refused task leaves the per-principal count as it was', async () => {
      const s = await store({ maxTasks: 2, maxTasksPerPrincipal: 2 });
      await s.save(task('a1'), caller('alice', 'tenant-x'));
      await s.save(task('b1'), caller('bob'));
      await expect(s.save(task('b2'), caller('bob', 'tenant-y'))).resolves.toBeUndefined();
      // bob made room from its own oldest (b1); alice's task stays.
      expect(await s.load('b1', caller('bob'))).toBeUndefined();
      expect(await s.load('a1', caller('alice', 'tenant-x'))).toBeDefined();
      await expect(s.save(task('c1'), caller('carol', 'tenant-x'))).rejects.toMatchObject({ code: 'TASKS_EXHAUSTED' });
      expect(await s.tasksOf(caller('carol'))).toBe(0);
      expect(await s.tasksOf(caller('bob'))).toBe(1);
    });

    it('reads its limits at every save: a reload that lowers maxTasks on the same limits object bounds the next save', async () => {
      const limits: TaskStoreLimits = { maxTasks: 100, ttlMs: 60_000, now: () => now };
      now = T0;
      const s = make(limits);
      await s.open();
      open.push(s);
      for (const id of ['a', 'b', 'c']) await s.save(task(id), caller('alice'));
      limits.maxTasks = 1;
      await s.save(task('d'), caller('alice'));
      expect(await s.load('c', caller('alice'))).toBeUndefined();
      expect(await s.load('d', caller('alice'))).toBeDefined();
    });

    it('expires a task ttl after its last save', async () => {
      const s = await store({ ttlMs: 1000 });
      await s.save(task('t1'), caller('alice'));
      now = T0 + 999;
      expect(await s.load('t1', caller('alice'))).toBeDefined();
      now = T0 + 1000;
      expect(await s.load('t1', caller('alice'))).toBeUndefined();
      expect((await s.list(LIST_ALL, caller('alice'))).tasks).toEqual([]);
    });

    it('lists newest status first, filtered by state and context, paged, artifacts only when asked', async () => {
      const s = await store();
      await s.save(task('old', TaskState.TASK_STATE_COMPLETED, 0), caller('alice'));
      await s.save(task('mid', TaskState.TASK_STATE_FAILED, 10), caller('alice'));
      await s.save(task('new', TaskState.TASK_STATE_COMPLETED, 20, 'ctx-2'), caller('alice'));
      const all = await s.list(LIST_ALL, caller('alice'));
      expect(all.tasks.map((t) => t.id)).toEqual(['new', 'mid', 'old']);
      expect(all.totalSize).toBe(3);
      const completed = await s.list({ ...LIST_ALL, status: TaskState.TASK_STATE_COMPLETED }, caller('alice'));
      expect(completed.tasks.map((t) => t.id)).toEqual(['new', 'old']);
      expect((await s.list({ ...LIST_ALL, contextId: 'ctx-2' }, caller('alice'))).tasks.map((t) => t.id)).toEqual(['new']);
      const first = await s.list({ ...LIST_ALL, pageSize: 2, includeArtifacts: false }, caller('alice'));
      expect(first.tasks.map((t) => t.id)).toEqual(['new', 'mid']);
      expect(first.tasks[0]?.artifacts).toEqual([]);
      const second = await s.list({ ...LIST_ALL, pageSize: 2, pageToken: first.nextPageToken }, caller('alice'));
      expect(second.tasks.map((t) => t.id)).toEqual(['old']);
      expect(second.nextPageToken).toBe('');
    });

    it('pages by cursor: a task created between two pages shifts nothing, and each task comes once', async () => {
      const s = await store();
      for (let i = 0; i < 5; i++) await s.save(task(`t${i}`, TaskState.TASK_STATE_COMPLETED, i * 10), caller('alice'));
      const first = await s.list({ ...LIST_ALL, pageSize: 2 }, caller('alice'));
      expect(first.tasks.map((t) => t.id)).toEqual(['t4', 't3']);
      // A newer task arrives: with an offset token the next page would repeat t3.
      await s.save(task('t9', TaskState.TASK_STATE_COMPLETED, 90), caller('alice'));
      const second = await s.list({ ...LIST_ALL, pageSize: 2, pageToken: first.nextPageToken }, caller('alice'));
      expect(second.tasks.map((t) => t.id)).toEqual(['t2', 't1']);
      const third = await s.list({ ...LIST_ALL, pageSize: 2, pageToken: second.nextPageToken }, caller('alice'));
      expect(third.tasks.map((t) => t.id)).toEqual(['t0']);
      expect(third.nextPageToken).toBe('');
      // The token is opaque: not an offset a client could compute.
      expect(first.nextPageToken).not.toMatch(/^\d+$/);
    });

    it('refuses a page token it did not issue, and one issued for other filters', async () => {
      const s = await store();
      for (let i = 0; i < 3; i++) await s.save(task(`t${i}`, TaskState.TASK_STATE_COMPLETED, i * 10), caller('alice'));
      await expect(s.list({ ...LIST_ALL, pageToken: '2' }, caller('alice'))).rejects.toThrow(/pageToken is not a token this agent issued/);
      await expect(s.list({ ...LIST_ALL, pageToken: 'not base64 json!' }, caller('alice'))).rejects.toThrow(/pageToken/);
      const first = await s.list({ ...LIST_ALL, pageSize: 1 }, caller('alice'));
      await expect(s.list({ ...LIST_ALL, contextId: 'ctx-2', pageToken: first.nextPageToken }, caller('alice'))).rejects.toThrow(/other filters/);
      await expect(s.list({ ...LIST_ALL, historyLength: -1 }, caller('alice'))).rejects.toThrow(/historyLength/);
    });

    it('bounds the tasks of one principal (over all its tenants): beyond maxTasksPerPrincipal its own oldest is dropped, never another principal\'s', async () => {
      const s = await store({ maxTasks: 10, maxTasksPerPrincipal: 2 });
      await s.save(task('b1'), caller('bob'));
      await s.save(task('a1'), caller('alice'));
      await s.save(task('a2'), caller('alice', 'tenant-x'));
      expect(await s.tasksOf(caller('alice'))).toBe(2);
      expect(await s.tasksOf(caller('alice', 'tenant-y'))).toBe(2);
      await s.save(task('a3'), caller('alice'));
      expect(await s.load('a1', caller('alice'))).toBeUndefined();
      expect(await s.load('a2', caller('alice', 'tenant-x'))).toBeDefined();
      expect(await s.load('b1', caller('bob'))).toBeDefined();
      expect(await s.tasksOf(caller('alice'))).toBe(2);
      expect(await s.tasksOf(caller('bob'))).toBe(1);
      now = T0 + 60_000;
      expect(await s.tasksOf(caller('alice'))).toBe(0);
    });

    it('keeps push configs with their task: scoped to the caller, replaced by id, deleted by id', async () => {
      const s = await store();
      await s.save(task('t1'), caller('alice'));
      expect(await s.savePushConfig('t1', caller('alice'), 'c1', '{"id":"c1","url":"https://a.example/1"}')).toBe('saved');
      expect(await s.savePushConfig('t1', caller('alice'), 'c2', '{"id":"c2"}')).toBe('saved');
      expect(await s.savePushConfig('t1', caller('alice'), 'c1', '{"id":"c1","url":"https://a.example/2"}')).toBe('saved');
      expect((await s.pushConfigs('t1', caller('alice'))).sort()).toEqual(['{"id":"c1","url":"https://a.example/2"}', '{"id":"c2"}']);
      expect(await s.pushConfigs('t1', caller('bob'))).toEqual([]);
      expect(await s.pushConfigs('t1', caller('alice', 'other'))).toEqual([]);
      await s.deletePushConfig('t1', caller('bob'), 'c2');
      await s.deletePushConfig('t1', caller('alice'), 'c2');
      await s.deletePushConfig('t1', caller('alice'), 'unknown');
      expect(await s.pushConfigs('t1', caller('alice'))).toEqual(['{"id":"c1","url":"https://a.example/2"}']);
    });

    it('bounds push configs per task and per principal (over its tasks); a replacement is not one more; other principals are unaffected', async () => {
      const s = await store({ maxPushConfigsPerTask: 2, maxPushConfigsPerPrincipal: 3 });
      for (const id of ['t1', 't2']) await s.save(task(id), caller('alice'));
      await s.save(task('t1'), caller('bob'));
      expect(await s.savePushConfig('t1', caller('alice'), 'c1', '{}')).toBe('saved');
      expect(await s.savePushConfig('t1', caller('alice'), 'c2', '{}')).toBe('saved');
      expect(await s.savePushConfig('t1', caller('alice'), 'c3', '{}')).toBe('task-full');
      expect(await s.savePushConfig('t1', caller('alice'), 'c2', '{"again":true}')).toBe('saved');
      expect(await s.savePushConfig('t2', caller('alice'), 'c4', '{}')).toBe('saved');
      expect(await s.savePushConfig('t2', caller('alice'), 'c5', '{}')).toBe('principal-full');
      expect(await s.pushConfigs('t2', caller('alice'))).toEqual(['{}']);
      expect(await s.savePushConfig('t1', caller('bob'), 'c1', '{}')).toBe('saved');
      // Deleting one gives its room back.
      await s.deletePushConfig('t1', caller('alice'), 'c1');
      expect(await s.savePushConfig('t2', caller('alice'), 'c5', '{}')).toBe('saved');
    });

    it('forgets push configs with their task: when it expires and when maxTasks drops it; one saved before its task lives ttl, then follows the task', async () => {
      const s = await store({ maxTasks: 2, ttlMs: 1000, maxPushConfigsPerPrincipal: 10 });
      // Saved before the task exists (SendMessage saves the config first).
      expect(await s.savePushConfig('early', caller('alice'), 'c1', '{}')).toBe('saved');
      now = T0 + 500;
      await s.save(task('early'), caller('alice'));
      now = T0 + 1200;
      expect(await s.pushConfigs('early', caller('alice'))).toEqual(['{}']);
      now = T0 + 1500;
      expect(await s.load('early', caller('alice'))).toBeUndefined();
      expect(await s.pushConfigs('early', caller('alice'))).toEqual([]);
      // Dropped by maxTasks: its configs go, and no longer count.
      await s.save(task('a'), caller('alice'));
      expect(await s.savePushConfig('a', caller('alice'), 'c1', '{}')).toBe('saved');
      await s.save(task('b'), caller('alice'));
      await s.save(task('c'), caller('alice'));
      expect(await s.load('a', caller('alice'))).toBeUndefined();
      expect(await s.pushConfigs('a', caller('alice'))).toEqual([]);
      // A config of a task that was never saved is forgotten ttl after its save.
      expect(await s.savePushConfig('never', caller('alice'), 'c1', '{}')).toBe('saved');
      now += 1000;
      expect(await s.pushConfigs('never', caller('alice'))).toEqual([]);
    });

    it('forgotten push configs no longer count toward maxPushConfigsPerPrincipal', async () => {
      const s = await store({ ttlMs: 1000, maxPushConfigsPerPrincipal: 1 });
      await s.save(task('t1'), caller('alice'));
      expect(await s.savePushConfig('t1', caller('alice'), 'c1', '{}')).toBe('saved');
      expect(await s.savePushConfig('t1', caller('alice'), 'c2', '{}')).toBe('principal-full');
      now = T0 + 1000;
      await s.save(task('t2'), caller('alice'));
      expect(await s.savePushConfig('t2', caller('alice'), 'c1', '{}')).toBe('saved');
    });

    it('close() twice is safe', async () => {
      const s = await store();
      await s.close();
      await s.close();
    });
  });
}
