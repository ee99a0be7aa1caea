import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const stdoutLog = fileURLToPath(new URL('../../src/stdout-log.ts', import.meta.url));

/** Runs `script` (an ES module body; `stdoutLog` and `pino` imported) on the pinned Node; returns its stdout lines, parsed. */
function run(script: string): Array<Record<string, unknown>> {
  const source = `import pino from 'pino'; import { stdoutLog } from ${JSON.stringify(stdoutLog)};\n${script}`;
  const result = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', source], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) });
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
});
