import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { closeAll, tempDir, track } from '../support/gateway.ts';

afterEach(closeAll);

const launcher = fileURLToPath(new URL('../../bin/proto-gateway', import.meta.url));

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the launcher (through /bin/sh, with the system Node first on PATH) and collects its output. */
function run(args: string[], options: { onStdout?: (text: string, kill: (s: NodeJS.Signals) => void) => void; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(launcher, args, { env: { ...process.env, PATH: `/usr/bin:/bin:${process.env.PATH}`, ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      options.onStdout?.(stdout, (s) => child.kill(s));
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

function configFile(body: string): string {
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, body);
  return file;
}

describe('command line', () => {
  it('validate prints ok and exits 0 for the shipped configuration', async () => {
    const result = await run(['validate', '--config', fileURLToPath(new URL('../../config/gateway.yaml', import.meta.url))]);
    expect(result).toMatchObject({ code: 0, stdout: 'ok\n', stderr: '' });
  });

  it('validate prints file:line:col: message per problem on stderr and exits 1', async () => {
    const file = configFile('server:\n  port: eighty\n  bogus: 1\n');
    const result = await run(['validate', '--config', file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^${file}:2:9: server\\.port`));
    expect(lines[1]).toMatch(new RegExp(`^${file}:3:3: server\\.bogus: unknown key`));
  });

  it('exits 2 for a missing file and for a usage error', async () => {
    expect((await run(['validate', '--config', '/nonexistent/gateway.yaml'])).code).toBe(2);
    const usage = await run(['frobnicate']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: proto-gateway');
  });

  it('takes the config path from PROTO_GATEWAY_CONFIG', async () => {
    const file = configFile('server: { port: 0 }\n');
    expect((await run(['validate'], { env: { PROTO_GATEWAY_CONFIG: file } })).stdout).toBe('ok\n');
  });

  it('manifest prints the aggregated manifest as JSON on stdout and logs nothing there', async () => {
    const payments = track(await startPaymentsService({ port: 0 }));
    const file = configFile(`server: { port: 0, publicUrl: "https://gw.example.com/api" }
storage: { driver: memory }
backends:
  - { id: payments, kind: proto, url: "${payments.url}" }
`);
    const result = await run(['manifest', '--config', file]);
    expect(result.code).toBe(0);
    const manifest = JSON.parse(result.stdout);
    expect(manifest.PROTO.services['io.proto.agents'].http.endpoint).toBe('https://gw.example.com/api/');
    expect(manifest.PROTO.services['com.example.payments'].http.endpoint).toBe('https://gw.example.com/api/services/payments/');
    expect(result.stdout).not.toContain(new URL(payments.url).host);
  });

  it('serve runs on Node 24 whatever node comes first on PATH, logs JSON on stdout, and exits 0 on SIGTERM', async () => {
    const file = configFile('server: { port: 0 }\nstorage: { driver: memory }\n');
    let sent = false;
    const result = await run(['serve', '--config', file], {
      onStdout: (text, kill) => {
        if (!sent && text.includes('"msg":"listening"')) {
          sent = true;
          kill('SIGTERM');
        }
      },
    });
    expect(sent).toBe(true);
    expect(result.code).toBe(0);
    expect(result.signal).toBeNull();
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['listening', 'shutting down', 'stopped']));
    expect(lines.find((l) => l.msg === 'listening').url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it('serve exits non-zero when the port is taken, without a half-started gateway', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    track({ close: () => new Promise<void>((resolve) => blocker.close(() => resolve())) });
    const port = (blocker.address() as { port: number }).port;
    const result = await run(['serve', '--config', configFile(`server: { port: ${port} }\nstorage: { driver: memory }\n`)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('EADDRINUSE');
  });

  it('serve keeps answering while nobody reads its stdout, reports its dropped-lines counter, and still exits 0 on SIGTERM', async () => {
    // Its stdout is read up to the `listening` line, then never again: the access lines of a few
    // thousand requests fill the pipe, and the shutdown's own lines find it full.
    const child = spawn(launcher, ['serve', '--config', configFile('server: { port: 0 }\nstorage: { driver: memory }\n')], { stdio: ['ignore', 'pipe', 'pipe'] });
    track({ close: async () => void child.kill('SIGKILL') });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve) => {
      let text = '';
      const onData = (chunk: Buffer): void => {
        text += chunk.toString('utf8');
        // Complete lines only: the `listening` line may come in two chunks.
        const listening = text.split('\n').slice(0, -1).find((line) => line.includes('"msg":"listening"'));
        if (!listening) return;
        child.stdout.off('data', onData);
        child.stdout.pause();
        resolve((JSON.parse(listening) as { url: string }).url);
      };
      child.stdout.on('data', onData);
    });
    let answered = 0;
    for (let round = 0; round < 100; round++) {
      const statuses = await Promise.all(Array.from({ length: 32 }, () => fetch(`${url}healthz`).then((res) => res.status)));
      answered += statuses.filter((status) => status === 200).length;
    }
    expect(answered).toBe(3_200);
    const metrics = await (await fetch(`${url}metrics`)).text();
    expect(metrics).toMatch(/^proto_gateway_stdout_lines_dropped_total 0$/m);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 30_000);
});

