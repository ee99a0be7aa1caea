/**
 * Every write of the SQLite `CommandStore`, run on a thread of its own (`sqlite-writer-thread.ts`)
 * and coalesced: the writes asked for together go to the thread as one batch (one message): at once
 * when the thread is idle, else at the end of the turn of the event loop that asked for them. A
 * batch does not wait for the one in flight: the thread merges the batches that came while it
 * committed into its next transaction, so it commits back to back under load instead of idling
 * while the event loop gets round to its answer (issue 29: SQLite delivered/s +13 % in the median
 * of six interleaved rounds). So the fsync of a `synchronous=FULL` commit (1–2 ms on a disk) never
 * blocks the event loop, and the dispatcher's bookkeeping (claims, completions, reschedules) shares
 * transactions with the accepts instead of committing one by one. Each write's promise settles once the
 * transaction holding it has committed (rejected with its own error, or with the commit's); the
 * answers come in the order the batches left.
 *
 * An unavailable store is a 503, not a 500: a write failing with an I/O error of SQLite (disk full,
 * I/O error, still locked after the busy timeout…) and every write the thread leaves unanswered
 * when it dies are refused with `STORE_UNAVAILABLE`. A thread that died is restarted, on the same
 * file, by the next write asked for (refused itself: it finds the store down); meanwhile `up` is
 * false, which `/readyz` reports. Restarting is safe: SQLite rolls back the transaction a dead
 * connection left open, and the writes it may have committed unanswered are idempotent accepts
 * (retried under the same id) or dispatch bookkeeping that leases make good. Without commands the
 * dispatcher's claims and the idempotency purge (at least every minute) are such writes.
 *
 * A thread whose file another process opened since (`sqlite-owner.ts`) is not restarted: the
 * store refuses every write with `STORE_UNAVAILABLE` and `up` is false until the thread takes the
 * file back, once the other process stopped.
 */
import { Worker } from 'node:worker_threads';
import { ProtoError } from '../errors.ts';
import type { WriteName, Writes } from './sqlite-command-sql.ts';

/** Most writes the thread merges into one transaction (a batch is never split: one larger goes alone). */
export const MAX_MERGED_WRITES = 1024;

/** What the thread is started with. */
export interface WriterData {
  path: string;
  busyTimeoutMs: number;
  /** Records indexed in the thread's memory before it merges them into the file's id index (default `MERGE_AT`). */
  mergeAt?: number;
  /** How often the thread beats while it owns the file, in ms (default `BEAT_MS`; a thread that lost it takes it back after `STALE_BEATS` without one). */
  beatMs?: number;
}

/** A batch sent to the thread: each write's name and its arguments (after the statements). */
export type WriteBatch = Array<[WriteName, unknown[]]>;

/** One write's outcome. */
export type WriteAnswer = { value: unknown } | { error: ErrorData };

/** An error as it crosses the thread boundary. */
export interface ErrorData {
  message: string;
  code?: string;
  /** SQLite's (extended) result code, when SQLite raised it. */
  errcode?: number;
}

/**
 * SQLite's primary result codes that say the store cannot write now, not that the write is wrong:
 * BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN, PROTOCOL.
 */
const UNAVAILABLE_CODES = new Set([5, 6, 7, 8, 10, 13, 14, 15]);

/**
 * What the thread posts: ready after opening (and after taking its file back); after a
 * transaction, the answers of each batch it merged (oldest first), or why the transaction failed
 * and how many batches it held (0: the open failed); taken over, when another process took its
 * file (before the failure of the transaction that found it).
 */
export type WriterMessage = { ready: true } | { answers: WriteAnswer[][] } | { failed: ErrorData; batches: number } | { takenOver: ErrorData };

/** The arguments of a write, after the statements. */
type WriteArgs<K extends WriteName> = Writes[K] extends (sql: never, ...args: infer A) => unknown ? A : never;

interface Pending {
  name: WriteName;
  args: unknown[];
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/** Told when the thread dies, when another process took its file, and when it writes again (the gateway logs each). */
export interface WriterHealth {
  down(reason: Error): void;
  up(): void;
  /** No write until the process that took the file stops and the thread takes it back (`up` then). */
  takenOver(reason: Error): void;
}

/** The writer thread of one store file, seen from the event loop. */
export class SqliteWriter {
  readonly #name: string;
  readonly #data: WriterData;
  readonly #health: WriterHealth | undefined;
  #worker: Worker | undefined;
  #queue: Pending[] = [];
  /** The batches sent and not yet answered, oldest first (the thread answers in that order). */
  #inFlight: Pending[][] = [];
  #scheduled = false;
  /** Why no write can run now (not open, closed, or the thread died and is not up again). */
  #stopped: Error | undefined;
  /** The thread died (not closed): the next write starts a new one. */
  #crashed = false;
  /** Another process took the file: no write until the thread takes it back (it says `ready`). */
  #lost = false;
  #onIdle: (() => void) | undefined;
  #opened: Promise<void> | undefined;
  #exited: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @param name how errors name the store (`${name} is not open`).
   * @param data the store file and its busy timeout.
   * @param health told when the thread dies and when a restarted one is up.
   */
  constructor(name: string, data: WriterData, health?: WriterHealth) {
    this.#name = name;
    this.#data = data;
    this.#health = health;
    this.#stopped = this.#notOpen();
  }

  /** True while the thread is open and takes writes (false before `open()`, after `close()`, and while a thread that died is not up again). */
  get up(): boolean {
    return this.#stopped === undefined;
  }

  /** Starts the thread and waits until its connection is open; rejects with the open's error. */
  open(): Promise<void> {
    if (this.#worker) return this.#opened!;
    const worker = new Worker(new URL('./sqlite-writer-thread.ts', import.meta.url), { workerData: this.#data });
    this.#worker = worker;
    this.#closing = undefined;
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    // Keeps the process alive while the thread opens (a caller awaiting `open()` may hold nothing else).
    worker.ref();
    this.#opened = new Promise((resolve, reject) => {
      const failed = (reason: Error): void => {
        // A restart that fails leaves the store unavailable (the next write tries again), not broken.
        const why = this.#crashed && !(reason instanceof ProtoError) ? this.#unavailable(reason.message) : reason;
        this.#stop(why);
        reject(why);
      };
      const died = (reason: Error): void => {
        // A thread that was up and not closed: the next write starts a new one.
        if (!this.#closing && !this.#stopped) {
          this.#crashed = true;
          this.#health?.down(reason);
        }
        failed(this.#closing ? this.#notOpen() : reason);
      };
      worker.on('message', (message: WriterMessage) => {
        if ('ready' in message) {
          // Open: the thread keeps the process alive only while writes are in flight.
          if (this.#inFlight.length === 0) worker.unref();
          if (!this.#closing) {
            this.#stopped = undefined;
            if (this.#crashed || this.#lost) this.#health?.up();
            this.#crashed = false;
            this.#lost = false;
          }
          resolve();
        } else if ('takenOver' in message) this.#takenOver(message.takenOver);
        // Answers of batches refused already (`#takenOver` refused every write in flight).
        else if (this.#lost) return;
        else if (this.#stopped) failed(this.#errorOf('failed' in message ? message.failed : { message: 'unexpected answer' }));
        else this.#answered(message);
      });
      worker.on('error', (err) => died(this.#unavailable(`the writer thread failed: ${err.message}`)));
      worker.on('exit', () => {
        if (this.#worker === worker) this.#worker = undefined;
        died(this.#unavailable('the writer thread stopped'));
      });
    });
    return this.#opened;
  }

  /** Ends the thread at once, as a crash would (how tests make it die); the next write starts a new one. */
  async terminate(): Promise<void> {
    await this.#worker?.terminate();
  }

  /** Runs the write `name` with `args` in the next batch; resolves with its result once committed. */
  run<K extends WriteName>(name: K, ...args: WriteArgs<K>): Promise<ReturnType<Writes[K]>> {
    if (this.#stopped) {
      // A new thread on the same file; this write is refused (the store is down), the next ones run once it is open.
      if (this.#crashed && !this.#worker) this.open().catch(() => {});
      return Promise.reject(this.#stopped);
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ name, args, resolve: resolve as (value: unknown) => void, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      if (this.#inFlight.length > 0) {
        // The thread is busy: what this turn asks for leaves together at its end, merged by the
        // thread with the rest into its next transaction.
        setImmediate(() => this.#sendScheduled());
        return;
      }
      // Idle: not a timer, not even the next turn: the batch leaves once the code running now (and
      // the promise reactions it queued) has asked for its writes. Accepts come already gathered by
      // the group commit.
      queueMicrotask(() => this.#sendScheduled());
    });
  }

  /** Lets the writes already asked for commit, then stops the thread. Safe to call twice. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const worker = this.#worker;
    this.#crashed = false;
    if (!worker) return this.#stop(this.#notOpen());
    if (this.#inFlight.length > 0 || this.#queue.length > 0) await new Promise<void>((resolve) => (this.#onIdle = resolve));
    this.#stop(this.#notOpen());
    // Alive until the thread has closed its connection (a caller awaiting `close()` may hold nothing else).
    worker.ref();
    worker.postMessage('close');
    await this.#exited;
    this.#worker = undefined;
    // Opened again, it starts afresh.
    this.#lost = false;
  }

  #sendScheduled(): void {
    this.#scheduled = false;
    this.#send();
  }

  #send(): void {
    if (this.#queue.length === 0 || !this.#worker) return;
    const batch = this.#queue;
    this.#queue = [];
    try {
      this.#worker.postMessage(batch.map((pending): [WriteName, unknown[]] => [pending.name, pending.args]));
    } catch (err) {
      // An argument that cannot cross to the thread (a bug of the caller): that batch fails, nothing was sent.
      this.#settle(batch, { failed: { message: `${this.#name}: ${(err as Error).message}` } });
      return;
    }
    this.#inFlight.push(batch);
    // Keeps the process alive while writes are in flight (and only then).
    this.#worker.ref();
  }

  /** The answers of the oldest batches in flight (those one transaction held). */
  #answered(message: { answers: WriteAnswer[][] } | { failed: ErrorData; batches: number }): void {
    if ('failed' in message) for (let i = 0; i < message.batches; i++) this.#settle(this.#inFlight.shift() ?? [], message);
    else for (const answers of message.answers) this.#settle(this.#inFlight.shift() ?? [], { answers });
  }

  /**
   * Another process opened the file and writes it now: this store writes nothing (what is in flight
   * or queued, and every write until the thread takes the file back, is refused with
   * `STORE_UNAVAILABLE`) and starts no new thread (it would take the file back at once, each
   * undoing the other). The thread keeps no process alive meanwhile.
   */
  #takenOver(data: ErrorData): void {
    if (this.#lost || this.#closing) return;
    this.#lost = true;
    const reason = this.#unavailable(data.message);
    this.#health?.takenOver(reason);
    this.#stop(reason);
    this.#worker?.unref();
  }

  /** Settles each write of `batch` with its answer (or the batch's failure). */
  #settle(batch: Pending[], message: { answers: WriteAnswer[] } | { failed: ErrorData }): void {
    batch.forEach((pending, i) => {
      const answer = 'answers' in message ? message.answers[i] : { error: message.failed };
      if ('error' in answer) pending.reject(this.#errorOf(answer.error));
      else pending.resolve(answer.value);
    });
    if (this.#inFlight.length === 0 && this.#queue.length === 0 && !this.#scheduled) this.#idle();
  }

  /** Nothing in flight or queued: the thread no longer keeps the process alive, and a `close()` waiting for this goes on. */
  #idle(): void {
    // A closing writer keeps its reference until the thread has exited (`#close`).
    if (!this.#closing) this.#worker?.unref();
    this.#onIdle?.();
    this.#onIdle = undefined;
  }

  /** No write runs after this: what waits is rejected with `reason`. */
  #stop(reason: Error): void {
    this.#stopped = reason;
    const waiting = [...this.#inFlight.flat(), ...this.#queue];
    this.#inFlight = [];
    this.#queue = [];
    for (const pending of waiting) pending.reject(reason);
    this.#onIdle?.();
    this.#onIdle = undefined;
  }

  #notOpen(): Error {
    return new Error(`${this.#name} is not open`);
  }

  /** `STORE_UNAVAILABLE` (503, `Retry-After`): the write was not confirmed, because `why`. */
  #unavailable(why: string): ProtoError {
    return new ProtoError('STORE_UNAVAILABLE', `${this.#name} is unavailable (${why}); the write was not confirmed`, undefined, { 'Retry-After': '1' });
  }

  /** The error of a failed write: `STORE_UNAVAILABLE` for an I/O error of SQLite, else the write's own. */
  #errorOf(data: ErrorData): Error {
    if (data.errcode !== undefined && UNAVAILABLE_CODES.has(data.errcode & 0xff)) return this.#unavailable(data.message);
    return Object.assign(new Error(data.message), data.code === undefined ? {} : { code: data.code });
  }
}
