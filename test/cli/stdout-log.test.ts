import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/gateway.ts';

const stdoutLog = fileURLToPath(new URL('../../src/stdout-log.ts', import.meta.url));

const cwd = fileURLToPath(new URL('../..', import.meta.url));
const prelude = `import pino from 'pino'; import { stdoutLog } from ${JSON.stringify(stdoutLog)};\n`;

/** Runs `script` (an ES module body; `stdoutLog` and `pino` imported) on the pinned Node; returns its stdout lines, parsed. */
function run(script: string): Array<Record<string, unknown>> {
  const result = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', prelude + script], { encoding: 'utf8', cwd });
  expect(result.stderr).toBe('');
  return result.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

describe('the serve log destination (stdout, one write per turn)', () => {
  it('writes every line, in order, when the turn ends', () => {
    const lines = run(`const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 500; i++) log.info({ i }, 'line');
      setImmediate(() => log.info({ i: 500 }, 'next turn'));`);
    expect(lines.map((line) => line.i)).toEqual(Array.from({ length: 501 }, (_, i) => i));
  });

  it('writes the lines still pending when the process exits', () => {
    const lines = run(`const log = pino({ base: null }, stdoutLog());
      log.info('before exit'); log.error('last words');
      process.exit(3);`);
    expect(lines.map((line) => line.msg)).toEqual(['before exit', 'last words']);
  });

  it('never blocks the event loop on a stdout nobody reads (a stalled pipe)', async () => {
    // 4 MB of lines into a pipe this test never reads, then a sign of life on stderr.
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', `${prelude}
      const log = pino({ base: null }, stdoutLog());
      for (let i = 0; i < 20_000; i++) log.info({ filler: 'x'.repeat(180) }, 'line');
      setImmediate(() => setImmediate(() => process.stderr.write('alive')));`], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    try {
      await eventually(async () => stderr.includes('alive'));
    } finally {
      child.kill('SIGKILL');
    }
  });
});
