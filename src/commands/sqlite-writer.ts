/**
 * Every write of the SQLite `CommandStore`, run on a thread of its own (`sqlite-writer-thread.ts`)
 * and coalesced: the writes asked for together (in one go of the event loop, before it turns to
 * I/O again) go to the thread as one batch, committed in one transaction; writes asked for while a
 * batch is in flight form the next one. So
 * the fsync of a `synchronous=FULL` commit (1–2 ms on a disk) never blocks the event loop, and the
 * dispatcher's bookkeeping (claims, completions, reschedules) shares transactions with the accepts
 * instead of committing one by one. Each write's promise settles once the transaction holding it
 * has committed (rejected with its own error, or with the commit's). A batch is as large as what
 * queued meanwhile: accepts come bounded by the group commit (`group-commit.ts`), the dispatcher's
 * writes by its concurrency.
 */
import { Worker } from 'node:worker_threads';
import type { WriteName, Writes } from './sqlite-command-sql.ts';

/** What the thread is started with. */
export interface WriterData {
  path: string;
  busyTimeoutMs: number;
}

/** A batch sent to the thread: each write's name and its arguments (after the statements). */
export type WriteBatch = Array<[WriteName, unknown[]]>;

/** One write's outcome. */
export type WriteAnswer = { value: unknown } | { error: ErrorData };

/** An error as it crosses the thread boundary. */
interface ErrorData {
  message: string;
  code?: string;
}

/** What the thread posts: ready after opening, a batch's answers, or why it (the open or the whole batch) failed. */
export type WriterMessage = { ready: true } | { answers: WriteAnswer[] } | { failed: ErrorData };

/** The arguments of a write, after the statements. */
type WriteArgs<K extends WriteName> = Writes[K] extends (sql: never, ...args: infer A) => unknown ? A : never;

interface Pending {
  name: WriteName;
  args: unknown[];
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** The writer thread of one store file, seen from the event loop. */
export class SqliteWriter {
  readonly #name: string;
  readonly #data: WriterData;
  #worker: Worker | undefined;
  #queue: Pending[] = [];
  #inFlight: Pending[] | undefined;
  #scheduled = false;
  /** Why no write can run any more (closed, or the thread stopped). */
  #stopped: Error | undefined;
  #onIdle: (() => void) | undefined;
  #opened: Promise<void> | undefined;
  #exited: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @param name how errors name the store (`${name} is not open`).
   * @param data the store file and its busy timeout.
   */
  constructor(name: string, data: WriterData) {
    this.#name = name;
    this.#data = data;
    this.#stopped = this.#notOpen();
  }

  /** Starts the thread and waits until its connection is open; rejects with the open's error. */
  open(): Promise<void> {
    if (this.#worker) return this.#opened!;
    const worker = new Worker(new URL('./sqlite-writer-thread.ts', import.meta.url), { workerData: this.#data });
    this.#worker = worker;
    this.#closing = undefined;
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    worker.unref();
    this.#opened = new Promise((resolve, reject) => {
      const failed = (reason: Error): void => {
        this.#stop(reason);
        reject(reason);
      };
      worker.on('message', (message: WriterMessage) => {
        if ('ready' in message) {
          this.#stopped = undefined;
          resolve();
        } else if (this.#stopped) failed(errorOf('failed' in message ? message.failed : { message: 'unexpected answer' }));
        else this.#answered(message);
      });
      worker.on('error', (err) => failed(new Error(`${this.#name}: the writer thread failed: ${err.message}`, { cause: err })));
      worker.on('exit', () => failed(this.#closing ? this.#notOpen() : new Error(`${this.#name}: the writer thread stopped`)));
    });
    return this.#opened;
  }

  /** Runs the write `name` with `args` in the next batch; resolves with its result once committed. */
  run<K extends WriteName>(name: K, ...args: WriteArgs<K>): Promise<ReturnType<Writes[K]>> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    return new Promise((resolve, reject) => {
      this.#queue.push({ name, args, resolve: resolve as (value: unknown) => void, reject });
      if (this.#inFlight || this.#scheduled) return;
      this.#scheduled = true;
      // Not a timer, not even the next turn: the batch leaves once the code running now (and the
      // promise reactions it queued) has asked for its writes. Accepts come already gathered by
      // the group commit; what is asked for while the batch is in flight goes in the next one.
      queueMicrotask(() => {
        this.#scheduled = false;
        this.#send();
      });
    });
  }

  /** Lets the writes already asked for commit, then stops the thread. Safe to call twice. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    if (this.#inFlight || this.#queue.length > 0) await new Promise<void>((resolve) => (this.#onIdle = resolve));
    this.#stop(this.#notOpen());
    worker.postMessage('close');
    await this.#exited;
    this.#worker = undefined;
  }

  #send(): void {
    if (this.#inFlight || this.#queue.length === 0 || !this.#worker) return;
    const batch = this.#queue;
    this.#queue = [];
    this.#inFlight = batch;
    // Keeps the process alive while writes are in flight (and only then).
    this.#worker.ref();
    try {
      this.#worker.postMessage(batch.map((pending): [WriteName, unknown[]] => [pending.name, pending.args]));
    } catch (err) {
      // An argument that cannot cross to the thread (a bug of the caller): that batch fails, nothing was sent.
      this.#answered({ failed: { message: `${this.#name}: ${(err as Error).message}` } });
    }
  }

  #answered(message: { answers: WriteAnswer[] } | { failed: ErrorData }): void {
    const batch = this.#inFlight ?? [];
    this.#inFlight = undefined;
    batch.forEach((pending, i) => {
      const answer = 'answers' in message ? message.answers[i] : { error: message.failed };
      if ('error' in answer) pending.reject(errorOf(answer.error));
      else pending.resolve(answer.value);
    });
    if (this.#queue.length > 0) return this.#send();
    this.#worker?.unref();
    this.#onIdle?.();
    this.#onIdle = undefined;
  }

  /** No write runs after this: what waits is rejected with `reason`. */
  #stop(reason: Error): void {
    this.#stopped = reason;
    const waiting = [...(this.#inFlight ?? []), ...this.#queue];
    this.#inFlight = undefined;
    this.#queue = [];
    for (const pending of waiting) pending.reject(reason);
    this.#onIdle?.();
    this.#onIdle = undefined;
  }

  #notOpen(): Error {
    return new Error(`${this.#name} is not open`);
  }
}

function errorOf(data: ErrorData): Error {
  return Object.assign(new Error(data.message), data.code === undefined ? {} : { code: data.code });
}
