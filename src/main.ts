/**
 * The command line (DESIGN.md, "The CLI"):
 *   proto-gateway serve    [--config FILE]   run the gateway; JSON log lines on stdout
 *   proto-gateway validate [--config FILE]   `ok` and exit 0, or `file:line:col: message` lines on stderr and exit 1
 *   proto-gateway manifest [--config FILE]   print the aggregated manifest as JSON on stdout
 * The config file defaults to `$PROTO_GATEWAY_CONFIG`, else `config/gateway.yaml`. A missing file
 * or a usage error exits 2. Only `serve` logs on stdout; the others log on stderr.
 *
 * `serve` handles signals: SIGTERM and SIGINT shut down gracefully within `server.shutdownTimeout`
 * (a second one exits at once); SIGHUP reloads the file and applies it in place
 * (src/reload/config-reloader.ts): an invalid file changes nothing, and settings that need a
 * restart are named in the log line.
 */
import { existsSync } from 'node:fs';
import pino from 'pino';
import { defaultRegistry, startGateway } from './app.ts';
import { BackendDirectory } from './backends/directory.ts';
import { ConfigError, formatProblems, loadConfig } from './gateway-config.ts';
import type { GatewayConfig } from './config/types.ts';
import { PublicManifest } from './manifest/public-manifest.ts';
import { gatewayCapabilitySpecs, gatewayTransports } from './manifest/gateway-capabilities.ts';
import { stdoutLog } from './stdout-log.ts';
import { stdoutMetrics } from './metrics/stdout.ts';
import { startTracing } from './telemetry/otlp-tracing.ts';
import { GATEWAY_VERSION } from './version.ts';

const USAGE = `usage: proto-gateway <serve|validate|manifest> [--config FILE]
  serve      run the gateway (default config: $PROTO_GATEWAY_CONFIG or config/gateway.yaml)
  validate   check a configuration file: prints "ok", or one file:line:col: message line per problem
  manifest   print the aggregated public manifest as JSON
`;

type Command = 'serve' | 'validate' | 'manifest';

class UsageError extends Error {}

function parseArgs(argv: string[]): { command: Command; config: string } {
  const args = [...argv];
  const command = (args[0] && !args[0].startsWith('-') ? args.shift() : 'serve') as Command;
  if (!['serve', 'validate', 'manifest'].includes(command)) throw new UsageError(`unknown command "${command}"`);
  let config = process.env.PROTO_GATEWAY_CONFIG || 'config/gateway.yaml';
  while (args.length > 0) {
    const arg = args.shift() as string;
    if (arg === '--config' || arg === '-c') {
      const value = args.shift();
      if (!value) throw new UsageError('--config needs a file');
      config = value;
    } else if (arg.startsWith('--config=')) config = arg.slice('--config='.length);
    else throw new UsageError(`unknown argument "${arg}"`);
  }
  return { command, config };
}

async function load(file: string): Promise<GatewayConfig | number> {
  if (!existsSync(file)) {
    process.stderr.write(`${file}: no such file\n`);
    return 2;
  }
  try {
    return await loadConfig(file);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${formatProblems(err.problems)}\n`);
    return 1;
  }
}

async function validate(file: string): Promise<number> {
  const config = await load(file);
  if (typeof config === 'number') return config;
  process.stdout.write('ok\n');
  return 0;
}

async function manifest(file: string): Promise<number> {
  const config = await load(file);
  if (typeof config === 'number') return config;
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const publicUrl = config.server.publicUrl ?? `http://${config.server.host}:${config.server.port}/`;
  const backends = new BackendDirectory(config.backends, publicUrl, logger);
  await Promise.all(backends.proto().map((b) => b.refresh()));
  const current = new PublicManifest({
    protocolVersion: config.protocol.version,
    gatewayVersion: GATEWAY_VERSION,
    publicUrl,
    auth: config.auth,
    capabilities: gatewayCapabilitySpecs(config),
    backends,
    transports: () => gatewayTransports(config, publicUrl),
  }).current();
  process.stdout.write(`${JSON.stringify(current, null, 2)}\n`);
  return 0;
}

async function serve(file: string): Promise<number | undefined> {
  const config = await load(file);
  if (typeof config === 'number') return config;
  // A stdout nobody reads costs bounded memory: lines beyond the limit are dropped, counted, and told once it is read again.
  const destination = stdoutLog({ onDropped: (lines) => logger.warn({ droppedLines: lines }, 'stdout was not read: log lines were dropped') });
  const logger = pino({ level: config.server.logLevel, base: { service: 'proto-gateway' } }, destination);
  const registry = defaultRegistry();
  stdoutMetrics(registry, destination);
  // Before the gateway starts, so every component's spans go to the registered provider.
  const tracing = startTracing({ traces: config.telemetry?.traces, env: process.env });
  if (tracing.enabled) logger.info({ endpoint: tracing.endpoint }, 'tracing: exporting spans over OTLP/HTTP');
  // Handlers first: a signal that arrives while the gateway starts still shuts it down cleanly.
  const started = startGateway(config, { logger, registry });
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // Last resort: shutdown keeps one deadline, but a component that ignores it must not keep the process.
    setTimeout(() => {
      logger.error('shutdown overran server.shutdownTimeout; exiting');
      process.exit(1);
    }, config.server.shutdownTimeoutMs + 5_000).unref();
    started
      .then((gateway) => gateway.close())
      // The spans of the shutdown itself are sent too.
      .then(() => tracing.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A reload that arrives while the gateway starts waits for it; the reloader logs its outcome.
  process.on('SIGHUP', () => void started.then((gateway) => gateway.reload('SIGHUP'), () => undefined));
  await started;
  return undefined;
}

async function main(argv: string[]): Promise<number | undefined> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n${USAGE}`);
    return 2;
  }
  if (parsed.command === 'validate') return validate(parsed.config);
  if (parsed.command === 'manifest') return manifest(parsed.config);
  return serve(parsed.config);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`proto-gateway: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
