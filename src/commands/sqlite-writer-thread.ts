/**
 * The writer thread of the SQLite `CommandStore` (started by `SqliteWriter`, `sqlite-writer.ts`):
 * its own connection on the store's file. The batches it is sent while a commit runs are merged and
 * run in ONE transaction once it is done (up to `MAX_MERGED_WRITES` writes; the rest go in the
 * next), answered in one message (each batch's answers, in the order sent): the thread never waits
 * for the event loop to take an answer before it commits what came meanwhile. Each write runs in a
 * savepoint of its own (a write that throws is undone alone and answered with its error; the others
 * commit), except a write of one statement, which SQLite undoes alone without one
 * (`SINGLE_STATEMENT_WRITES`). The commit is `synchronous=FULL` unless every write merged is in
 * `RELAXED_WRITES`. Its fsync happens here, off the gateway's event loop.
 *
 * The thread takes the file over as it opens and indexes its newest records in memory; between
 * commits it merges them into the on-disk id index (`sqlite-id-merge.ts`). A thread another has
 * taken the file from says so (`takenOver`), fails its transactions with `STORE_TAKEN_OVER`, and
 * takes the file back once its owner stops beating (`sqlite-owner.ts`), then says `ready` again.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { DatabaseSync } from 'node:sqlite';
import { SqliteHandle } from '../storage/sqlite.ts';
import { prepareStatements, RELAXED_WRITES, SCHEMA, SINGLE_STATEMENT_WRITES, WRITES, type WriteName } from './sqlite-command-sql.ts';
import { IdMerge } from './sqlite-id-merge.ts';
import { BEAT_MS, claimFile, OwnerWatch, STALE_BEATS, StoreTakenOver, takeOver, type OwnedState } from './sqlite-owner.ts';
import { MAX_MERGED_WRITES, type ErrorData, type WriteAnswer, type WriteBatch, type WriterData, type WriterMessage } from './sqlite-writer.ts';

const { path, busyTimeoutMs, mergeAt, beatMs = BEAT_MS } = workerData as WriterData;
const port = parentPort!;

function prepare(db: DatabaseSync) {
  return {
    sql: prepareStatements(db),
    savepoint: db.prepare('SAVEPOINT write'),
    release: db.prepare('RELEASE write'),
    rollbackTo: db.prepare('ROLLBACK TO write'),
  };
}

const handle = new SqliteHandle('SqliteCommandStore writer', path, { schema: SCHEMA, prepare, busyTimeoutMs });
let synchronous: 'FULL' | 'NORMAL' = 'FULL';
/** This thread's hold on the file, and the merge of its id index (set once open; no merge while the file is lost). */
let state: OwnedState;
let merge: IdMerge | undefined;
/** Beats while the thread owns the file and nothing else wrote meanwhile; watches the owner while it does not. */
let ownerTimer: NodeJS.Timeout | undefined;
let lost = false;

function setSynchronous(wanted: 'FULL' | 'NORMAL'): void {
  if (wanted === synchronous) return;
  handle.db.exec(`PRAGMA synchronous = ${wanted}`);
  synchronous = wanted;
}

function runBatch(batch: WriteBatch): { answers: WriteAnswer[] } | { failed: ErrorData } {
  setSynchronous(batch.every(([name]) => RELAXED_WRITES.has(name)) ? 'NORMAL' : 'FULL');
  try {
    return {
      answers: handle.transaction((statements) => {
        claimFile(state, beatMs);
        return batch.map(([name, args]) => runWrite(statements, name, args));
      }),
    };
  } catch (err) {
    loseIfTakenOver(err);
    return { failed: errorData(err) };
  }
}

/** The file is another's: says so (once), merges no more, and watches the owner to take the file back when it stops beating. */
function loseIfTakenOver(err: unknown): void {
  if (!(err instanceof StoreTakenOver) || lost) return;
  lost = true;
  clearTimeout(mergeTimer);
  mergeTimer = undefined;
  merge = undefined;
  port.postMessage({ takenOver: errorData(err) } satisfies WriterMessage);
  const watch = new OwnerWatch(beatMs * STALE_BEATS);
  clearInterval(ownerTimer);
  ownerTimer = setInterval(() => {
    try {
      const { epoch, beat } = handle.statements.sql.owner.get() as { epoch: number; beat: number };
      if (watch.stale(epoch, beat)) own();
    } catch {
      // Not now (locked, an I/O error): the watch goes on.
    }
  }, beatMs);
}

/** Takes the file (over, or back) and indexes its records not merged; beats from then on. Throws what the transaction threw. */
function own(): void {
  state = handle.transaction(({ sql }) => takeOver(sql));
  merge = new IdMerge(state, mergeAt);
  clearInterval(ownerTimer);
  // A beat of its own when no transaction beat meanwhile: the owner of an idle store still beats.
  ownerTimer = setInterval(() => {
    if (performance.now() - state.beatAt < beatMs || received.length > 0) return;
    setSynchronous('NORMAL');
    try {
      handle.transaction(() => claimFile(state, beatMs));
    } catch (err) {
      loseIfTakenOver(err);
    }
  }, beatMs);
  if (lost) {
    lost = false;
    port.postMessage({ ready: true } satisfies WriterMessage);
    scheduleTurn();
  }
}

/** One step of the merge of the id index, in a transaction of its own (it indexes what is durable already: no fsync). */
function mergeStep(merge: IdMerge): void {
  setSynchronous('NORMAL');
  try {
    handle.transaction(() => {
      claimFile(state, beatMs);
      merge.step();
    });
    merge.committed();
  } catch (err) {
    // An I/O error (the batches say so): tried again later.
    merge.failed();
    loseIfTakenOver(err);
  }
}

function runWrite(statements: ReturnType<typeof prepare>, name: WriteName, args: unknown[]): WriteAnswer {
  const write = WRITES[name] as (...all: unknown[]) => unknown;
  if (SINGLE_STATEMENT_WRITES.has(name)) {
    try {
      return { value: write(state, ...args) };
    } catch (err) {
      // SQLite undid the statement; when it ended the whole transaction (I/O error) the batch fails.
      if (!handle.db.isTransaction) throw err;
      return { error: errorData(err) };
    }
  }
  statements.savepoint.run();
  try {
    const value = write(state, ...args);
    statements.release.run();
    return { value };
  } catch (err) {
    // Throws in turn when SQLite already ended the transaction (I/O error): the batch then fails.
    statements.rollbackTo.run();
    statements.release.run();
    return { error: errorData(err) };
  }
}

function errorData(err: unknown): ErrorData {
  const { code, errcode } = (err ?? {}) as { code?: unknown; errcode?: unknown };
  return {
    message: (err as Error)?.message ?? String(err),
    ...(typeof code === 'string' && { code }),
    ...(typeof errcode === 'number' && { errcode }),
  };
}

try {
  handle.open();
  // Each write's savepoint keeps a statement journal (the pages it changed, to undo it alone). With
  // temp files SQLite creates, writes and unlinks one for every transaction; in memory it is a buffer.
  handle.db.exec('PRAGMA temp_store = MEMORY');
  own();
  port.postMessage({ ready: true } satisfies WriterMessage);
} catch (err) {
  port.postMessage({ failed: errorData(err), batches: 0 } satisfies WriterMessage);
  port.close();
}

/** Batches received and not yet committed, in the order sent. */
const received: WriteBatch[] = [];
/** A turn is to run at once (batches came). */
let scheduled = false;
/** A turn is to run when the merge may take its next step. */
let mergeTimer: NodeJS.Timeout | undefined;

/** A turn of this thread's work: the batches received commit, then a step of the merge when it may take one. */
function turn(): void {
  scheduled = false;
  if (received.length > 0) commitReceived();
  if (merge?.waitMs() === 0) mergeStep(merge);
  scheduleTurn();
}

/** Commits the batches received (as many as `MAX_MERGED_WRITES` allows) in one transaction and answers each. */
function commitReceived(): void {
  let count = 0;
  let writes = 0;
  while (count < received.length && (count === 0 || writes + received[count].length <= MAX_MERGED_WRITES)) writes += received[count++].length;
  const batches = received.splice(0, count);
  const outcome = runBatch(batches.flat());
  // One message for the whole transaction: the answers of each batch merged into it, in order.
  if ('failed' in outcome) port.postMessage({ failed: outcome.failed, batches: batches.length } satisfies WriterMessage);
  else {
    let at = 0;
    port.postMessage({ answers: batches.map((batch) => outcome.answers.slice(at, (at += batch.length))) } satisfies WriterMessage);
  }
}

/**
 * Batches waiting: the next turn runs once the messages that came during this one are all received
 * (a later turn of this thread's loop). Else, a merge under way: when it may take its next step.
 */
function scheduleTurn(): void {
  if (scheduled) return;
  if (received.length > 0) {
    clearTimeout(mergeTimer);
    mergeTimer = undefined;
    scheduled = true;
    setImmediate(turn);
    return;
  }
  const wait = merge?.waitMs();
  if (wait === undefined || mergeTimer) return;
  mergeTimer = setTimeout(() => {
    mergeTimer = undefined;
    turn();
  }, wait);
}

port.on('message', (message: WriteBatch | 'close') => {
  if (message === 'close') {
    // Sent once every write was answered; a batch still here would be committed first.
    while (received.length > 0) commitReceived();
    // A merge cut short here goes on from the records when the file is opened again.
    clearTimeout(mergeTimer);
    clearInterval(ownerTimer);
    merge = undefined;
    handle.close();
    port.close();
    return;
  }
  received.push(message);
  scheduleTurn();
});

// A file opened with many records not merged yet: the merge starts now, not with the first batch.
if (merge) scheduleTurn();
