/**
 * Processes of the end-to-end benchmarks: each helper process prints one JSON line with its `url`
 * once listening (the gateway's `serve` does too); `spawnWithUrl` starts one and waits for that
 * line, `stop` ends it with SIGTERM, `stopAll` ends every one started, and `freePort` finds a free
 * loopback port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const children: ChildProcess[] = [];

/** Spawns a process and resolves with the first JSON line it prints that has `url` (without a trailing slash). */
export function spawnWithUrl(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let pending = '';
    const onData = (chunk: Buffer): void => {
      pending += chunk.toString('utf8');
      for (const line of pending.split('\n')) {
        try {
          const parsed = JSON.parse(line) as { url?: string };
          if (parsed.url) {
            child.stdout!.off('data', onData);
            // Keep draining (the gateway logs every request) so the pipe never blocks it.
            child.stdout!.resume();
            return resolve({ url: parsed.url.replace(/\/$/, ''), child });
          }
        } catch {
          // not a complete JSON line yet
        }
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before listening`)));
  });
}

/** Ends a child with SIGTERM and waits for it to exit. */
export function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** Ends every child `spawnWithUrl` started (and tracked ones added with `track`). */
export async function stopAll(): Promise<void> {
  await Promise.all(children.map(stop));
}

/** Adds a child started elsewhere to those `stopAll` ends. */
export function track(child: ChildProcess): void {
  children.push(child);
}

/** A free loopback TCP port (bound, read and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
