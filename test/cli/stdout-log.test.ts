import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/gateway.ts';

const stdoutLog = fileURLToPath(new URL('../../src/stdout-log.ts', import.meta.url));

const cwd = fileURLToPath(new URL('../..', import.meta.url));
const prelude = `import pino from 'pino'; import { stdoutLog } from ${JSON.stringify(stdoutLog)};\n`;

/** The pinned Node's arguments that run `script` (an ES module body; `stdoutLog` and `pino` imported). */
const scriptArgs = (script: string): string[] => ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', prelude + script];

/** Runs `script` to its end; returns its stdout lines, parsed. */
function run(script: string): Array<Record<string, unknown>> {
  const result = spawnSync(process.execPath, scriptArgs(script), { encoding: 'utf8', cwd });
  expect(result.stderr).toBe('');
  return result.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

/** The child's exit code, once it has exited and its stdout has ended (in either order). */
async function finished(child: ChildProcessByStdio<null, Readable, Readable>): Promise<number | null> {
  const [[code]] = await Promise.all([once(child, 'exit') as Promise<[number | null]>, once(child.stdout, 'end')]);
  return code;
}

/** Starts `script` with its stdout and stderr on pipes (this test reads stdout, or does not). */
function start(script: string): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, scriptArgs(script), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Reads `child`'s stdout the way a slow reader does: takes what is there, then pauses `pauseMs`; returns what it read so far. */
function readSlowly(child: ChildProcessByStdio<null, Readable, Readable>, pauseMs: number): () => string {
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), pauseMs);
  });
  return () => stdout;
}

/**
 * 4 MB of lines (20,000) from a process holding 256 KiB at most (its drops told in `dropped` lines),
 * then `then`; its stdout read from `readAfterMs` on. Its exit code, and the lines written and told dropped.
 */
async function beyondTheBound(
  then: string,
  readAfterMs: number,
  onDropped = `(lines) => log.warn({ droppedLines: lines }, 'dropped')`,
): Promise<{ code: number | null; written: number; told: number; after: boolean }> {
  const child = start(`
    const log = pino({ base: null }, stdoutLog({ maxHeldBytes: 256 * 1024, onDropped: ${onDropped} }));
    for (let i = 0; i < 20_000; i++) log.info({ filler: 'x'.repeat(180) }, 'line');
    ${then}`);
  let stdout = '';
  child.stdout.pause();
  try {
    await new Promise((resolve) => setTimeout(resolve, readAfterMs));
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const code = finished(child);
    child.stdout.resume();
    const exit = await code;
    const parsed = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; droppedLines?: number });
    return {
      code: exit,
      written: parsed.filter((line) => line.msg === 'line').length,
      told: parsed.filter((line) => line.msg === 'dropped').reduce((sum, line) => sum + line.droppedLines!, 0),
      after: parsed.some((line) => line.msg === 'after'),
    };
  } finally {
    child.kill('SIGKILL');
  }
}

describe('the serve log destination (stdout, one write per FLUSH_MS)', () => {
  it('writes every line, in order', () => {
    const lines = run(`const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 500; i++) log.info({ i }, 'line');
      setImmediate(() => log.info({ i: 500 }, 'next turn'));`);
    expect(lines.map((line) => line.i)).toEqual(Array.from({ length: 501 }, (_, i) => i));
  });

  it('writes the lines of many turns in one write once the flush delay is past', () => {
    // Counts the writes to stdout (the destination calls fs.writeSync), logs a line in each of five
    // turns, and looks once the delay (500 ms here, so a slow machine's turns stay inside it) is past.
    const lines = run(`import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
      const write = fs.writeSync; let writes = 0;
      fs.writeSync = (...args) => { if (args[0] === 1) writes++; return write(...args); };
      syncBuiltinESMExports();
      const log = pino({ base: null }, stdoutLog({ flushMs: 500 }));
      let turn = 0;
      const next = () => { log.info({ turn }, 'line'); if (++turn < 5) setImmediate(next); };
      next();
      setTimeout(() => { const counted = writes; log.info({ writes: counted }, 'counted'); }, 1_000);`);
    expect(lines.map((line) => line.turn ?? line.writes)).toEqual([0, 1, 2, 3, 4, 1]);
  });

  it('writes a line that came while a write was held up by a full pipe, once the pipe is read again, not at exit', async () => {
    // 200 KB of lines fill the pipe this test does not read for 500 ms; the last line comes meanwhile.
    // The process lives 3 s more: the last line must arrive before it says so on stderr.
    const child = start(`
      const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 1_000; i++) log.info({ filler: 'x'.repeat(180) }, 'line');
      setTimeout(() => log.info('last'), 100);
      setTimeout(() => process.stderr.write('leaving'), 3_000);`);
    let stdout = '';
    let lastBeforeLeaving: boolean | undefined;
    child.stderr.on('data', () => (lastBeforeLeaving ??= stdout.includes('"msg":"last"')));
    child.stdout.pause();
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stdout.resume();
      await new Promise((resolve) => child.once('exit', resolve));
      expect(lastBeforeLeaving).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  }, 15_000);

  it('writes the lines still pending when the process exits', () => {
    const lines = run(`const log = pino({ base: null }, stdoutLog());
      log.info('before exit'); log.error('last words');
      process.exit(3);`);
    expect(lines.map((line) => line.msg)).toEqual(['before exit', 'last words']);
  });

  it('never blocks the event loop on a stdout nobody reads (a stalled pipe)', async () => {
    // 4 MB of lines into a pipe this test never reads, then a sign of life on stderr.
    const child = start(`
      const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 20_000; i++) log.info({ filler: 'x'.repeat(180) }, 'line');
      setImmediate(() => setImmediate(() => process.stderr.write('alive')));`);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    try {
      await eventually(async () => stderr.includes('alive'));
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('holds at most maxHeldBytes while stdout is not read, and tells how many lines it dropped once stdout is read again', async () => {
    // The process lives 2 s more: the warning comes from a write that went through while it runs.
    const { code, written, told } = await beyondTheBound(`setTimeout(() => process.stderr.write('leaving'), 2_000);`, 500);
    expect(code).toBe(0);
    // What it held and the pipe's own buffer came through; every other line is counted as dropped.
    expect(written).toBeGreaterThan(0);
    expect(written * 200).toBeLessThan(1024 * 1024);
    expect(written + told).toBe(20_000);
  }, 15_000);

  it('exits when stdout takes nothing at exit (a full pipe nobody reads), after EXIT_WRITE_MS', async () => {
    const child = start(`
      const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 20_000; i++) log.info({ filler: 'x'.repeat(180) }, 'line');
      setTimeout(() => { log.info('last words'); process.exit(3); }, 300);`);
    child.stdout.pause();
    try {
      const exited = await Promise.race([
        new Promise((resolve) => child.once('exit', (code) => resolve(code))),
        new Promise((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000)),
      ]);
      expect(exited).toBe(3);
    } finally {
      child.kill('SIGKILL');
    }
  }, 15_000);

  it('goes on writing at exit while a slow reader takes the lines, beyond EXIT_WRITE_MS', async () => {
    // 1 MB of lines held when the process exits; the reader takes a chunk every 100 ms (about 0.6
    // MB/s), so writing them all outlasts EXIT_WRITE_MS while every 100 ms something goes through.
    const child = start(`
      const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 5_000; i++) log.info({ i, filler: 'x'.repeat(180) }, 'line');
      setTimeout(() => process.exit(0), 50);`);
    const read = readSlowly(child, 100);
    try {
      expect(await finished(child)).toBe(0);
      const stdout = read();
      const numbers = new Set(stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { i: number }).i));
      expect(numbers.size).toBe(5_000);
      // A write stdout took in part was continued where it stopped: no line cut.
      expect(stdout.split('\n').filter(Boolean).length).toBe(5_000);
    } finally {
      child.kill('SIGKILL');
    }
  }, 30_000);

  it('keeps up with a reader that pauses between reads: a full pipe is tried again within RETRY_MS, nothing dropped', async () => {
    // 4 MB/s of lines for 2 s with 1 MiB held at most; the reader takes what is there, then pauses
    // 5 ms. Tried again only every 100 ms (as sonic-boom does), a full pipe passes far less than that.
    const child = start(`
      const log = pino({ base: null }, stdoutLog({ maxHeldBytes: 1024 * 1024, onDropped: (lines) => log.warn({ droppedLines: lines }, 'dropped') }));
      let i = 0;
      const started = Date.now();
      const tick = setInterval(() => {
        for (let n = 0; n < 20; n++) log.info({ i: i++, filler: 'x'.repeat(180) }, 'line');
        if (Date.now() - started > 2_000) {
          clearInterval(tick);
          log.info({ total: i }, 'total');
        }
      }, 1);`);
    const read = readSlowly(child, 5);
    try {
      await finished(child);
      const lines = read().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; total?: number; droppedLines?: number });
      expect(lines.filter((line) => line.msg === 'dropped')).toEqual([]);
      expect(lines.filter((line) => line.msg === 'line').length).toBe(lines.find((line) => line.msg === 'total')!.total);
    } finally {
      child.kill('SIGKILL');
    }
  }, 30_000);

  it('goes on without stdout once its reader closed it (EPIPE): no crash, every line after counted as dropped', async () => {
    const child = start(`
      const out = stdoutLog();
      const log = pino({ base: null }, out);
      log.info('first');
      setTimeout(() => {
        for (let i = 0; i < 1_000; i++) log.info({ filler: 'x'.repeat(180) }, 'line');
        setTimeout(() => process.stderr.write(JSON.stringify({ dropped: out.droppedLines() })), 200);
      }, 500);`);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.stdout.once('data', () => child.stdout.destroy());
    try {
      const code = await new Promise((resolve) => child.once('exit', resolve));
      expect(code).toBe(0);
      expect(JSON.parse(stderr)).toEqual({ dropped: 1_000 });
    } finally {
      child.kill('SIGKILL');
    }
  }, 15_000);

  it('tells the lines it dropped even when the process exits before stdout is read again', async () => {
    // The process exits at once: the held lines and the warning are written by the exit.
    const { code, written, told } = await beyondTheBound('process.exit(0);', 300);
    expect(code).toBe(0);
    expect(told).toBeGreaterThan(0);
    expect(written + told).toBe(20_000);
  }, 15_000);

  it('goes on logging when the report of drops throws', async () => {
    // A report that throws (from the retry timer, or inside a log call) must not crash the process nor stop the log.
    const { code, written, after } = await beyondTheBound(`setTimeout(() => log.info('after'), 1_000);`, 300, `() => { throw new Error('a failing report'); }`);
    expect(code).toBe(0);
    expect(written).toBeGreaterThan(0);
    expect(after).toBe(true);
  }, 15_000);
});

