/**
 * A gateway in its own process: `bin/proto-gateway serve` spawned on a config file, its JSON log
 * lines collected, its exit awaited. For what only a real process shows: signals and exit codes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track } from './gateway.ts';

const launcher = fileURLToPath(new URL('../../bin/proto-gateway', import.meta.url));

/** A spawned gateway. */
export interface GatewayProcess {
  child: ChildProcess;
  /** The JSON log lines written so far (stdout), parsed. */
  logs: Array<Record<string, any>>;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal(name: NodeJS.Signals): void;
  close(): Promise<void>;
}

/** Spawns `proto-gateway serve --config file`; killed by `closeAll()` if still running. */
export function spawnGateway(file: string, env: NodeJS.ProcessEnv = {}): GatewayProcess {
  const child = spawn(launcher, ['serve', '--config', file], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, any>> = [];
  let pending = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) logs.push(JSON.parse(line));
  });
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return track({
    child,
    logs,
    stderr: () => stderr,
    exited,
    signal: (name) => child.kill(name),
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  });
}
