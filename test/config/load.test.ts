import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  formatProblems,
  loadConfig,
  parseDuration,
  parseSize,
  type ConfigProblem,
} from '../../src/gateway-config.ts';
import type { LegacyBackendConfig, ProtoBackendConfig } from '../../src/config/types.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let dir: string;
let counter = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pgw-config-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `text` (and any extra files, relative to it) to a fresh config directory; returns the config path. */
async function writeConfig(text: string, files: Record<string, string> = {}): Promise<string> {
  const base = join(dir, `case-${++counter}`);
  await mkdir(base, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(base, name)), { recursive: true });
    await writeFile(join(base, name), content);
  }
  const file = join(base, 'gateway.yaml');
  await writeFile(file, text);
  return file;
}

/** The problems a config is refused with (fails the test if it loads). */
async function problemsOf(text: string, env: NodeJS.ProcessEnv = {}, files: Record<string, string> = {}): Promise<ConfigProblem[]> {
  const file = await writeConfig(text, files);
  const error = await loadConfig(file, env).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

/** `[line, column, message]` of each problem, for compact assertions. */
function where(problems: ConfigProblem[]): [number, number, string][] {
  return problems.map((p) => [p.line, p.column, p.message]);
}

const legacyBackend = (extra: string) => `backends:
  - id: orders
    kind: legacy
    url: http://127.0.0.1:3001
${extra}`;

describe('the shipped config/gateway.yaml', () => {
  it('loads and validates with no environment', async () => {
    const config = await loadConfig(join(repoRoot, 'config/gateway.yaml'), {});
    expect(config.file).toBe(join(repoRoot, 'config/gateway.yaml'));
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8080, bodyLimitBytes: 1048576, shutdownTimeoutMs: 10_000 });
    expect(config.auth.type).toBe('none');
    expect(config.storage.path).toBe(join(repoRoot, 'data/gateway.db'));
    expect(config.events.retention.maxAgeMs).toBe(30 * 86_400_000);
    expect(config.grpc).toBeUndefined();
    expect(config.backends.map((b) => [b.id, b.kind])).toEqual([
      ['orders', 'legacy'],
      ['payments', 'proto'],
    ]);
  });

  it('reads the records schema file relative to the config', async () => {
    const config = await loadConfig(join(repoRoot, 'config/gateway.yaml'), {});
    const orders = config.backends[0] as LegacyBackendConfig;
    expect(orders.records[0].schemaFile).toBe(join(repoRoot, 'config/schemas/order-event.json'));
    expect(orders.records[0].schema).toMatchObject({ type: 'object', required: ['orderId', 'status'] });
    expect(orders.commands[0].jsonSchema).toMatchObject({ required: ['sku', 'qty'] });
  });
});

describe('defaults', () => {
  it('an empty file is the contract defaults', async () => {
    const config = await loadConfig(await writeConfig(''), {});
    expect(config.server).toEqual({
      host: '127.0.0.1',
      port: 8080,
      bodyLimitBytes: 1048576,
      maxJsonDepth: 64,
      shutdownTimeoutMs: 10_000,
      watchConfig: false,
      logLevel: 'info',
      cors: { origins: [] },
    });
    expect(config.protocol).toEqual({ version: '1.0.0' });
    expect(config.auth).toEqual({ type: 'none', header: 'X-Api-Key', keys: [] });
    expect(config.storage).toEqual({
      driver: 'sqlite',
      path: join(dirname(config.file), 'data/gateway.db'),
      url: 'redis://127.0.0.1:6379/0',
      prefix: 'pgw:',
      redis: { waitReplicas: 0, waitTimeoutMs: 1000, waitAof: false },
    });
    expect(config.metrics).toEqual({ public: false });
    expect(config.events).toEqual({ pageSize: { default: 100, max: 1000 }, maxEventBytes: 2 * 1024 * 1024, retention: { maxEvents: 10_000_000, maxAgeMs: 2_592_000_000 } });
    expect(config.commands).toEqual({
      idempotencyWindowMs: 86_400_000,
      rateLimit: { perSecond: 0, burst: 0 },
      dispatch: { timeoutMs: 10_000, concurrency: 16, retry: { scheduleMs: [1e3, 5e3, 30e3, 120e3, 600e3, 1800e3, 3600e3] } },
    });
    expect(config.sse).toEqual({ keepaliveMs: 15_000, maxBufferedBytes: 1048576, maxConnections: 10_000, maxConnectionsPerPrincipal: 1000, closeOnTerminal: true });
    expect(config.webhooks).toEqual({
      allowPrivateNetworks: [],
      allowHttp: false,
      retry: { scheduleMs: ['5s', '5m', '30m', '2h', '5h', '10h', '14h', '20h', '24h'].map(parseDuration) },
      timeoutMs: 15_000,
      concurrency: 64,
      previousSecretKeys: [],
      maxSubscriptionsPerPrincipal: 100,
      maxSubscriptions: 10_000,
      disableAfter: { durationMs: 5 * 86_400_000, failures: 10 },
      rotationOverlapMs: 86_400_000,
      recovery: { perSecond: 50, concurrency: 4 },
      rateLimit: { perSecond: 0 },
    });
    expect(config.registry).toEqual({ allowNetworks: [] });
    expect(config.a2a).toMatchObject({ enabled: true, settleMs: 2000, timeoutMs: 60_000, name: 'proto-gateway', maxTasks: 10_000, taskTtlMs: 86_400_000, publicSkills: false });
    expect(config.mcp).toEqual({ enabled: true, maxSessions: 1000, maxSessionsPerPrincipal: 500, idleTimeoutMs: 1_800_000, allowedHosts: [] });
    expect(config.console).toEqual({ enabled: true, path: '/console' });
    expect(config.grpc).toBeUndefined();
    expect(config.backends).toEqual([]);
  });

  it('a present grpc block gets its defaults', async () => {
    const config = await loadConfig(await writeConfig('grpc: {}\n'), {});
    expect(config.grpc).toEqual({ host: '127.0.0.1', port: 9090 });
  });

  it('fills backend, command, query and records defaults', async () => {
    const text = `${legacyBackend(`    commands:
      - type: PlaceOrder
        jsonSchema: { type: object }
        request: { path: /orders }
    queries:
      - schema: list-orders
        request: { path: /orders }
    records:
      - path: /orders
        types: [OrderCreatedV1]
        event: { type: OrderCreatedV1, id: "{id}" }
`)}  - id: payments
    kind: proto
    url: http://127.0.0.1:3002/
`;
    const config = await loadConfig(await writeConfig(text), {});
    const [orders, payments] = config.backends as [LegacyBackendConfig, ProtoBackendConfig];
    expect(orders).toMatchObject({
      service: 'orders',
      source: 'urn:proto-gateway:orders',
      circuit: { failures: 5, cooldownMs: 30_000 },
      headers: {},
      correlationHeader: 'X-Request-Id',
    });
    expect(orders.commands[0]).toMatchObject({ schema: 'place-order', version: '1.0', request: { method: 'POST', path: '/orders' } });
    expect(orders.queries[0]).toMatchObject({ version: '1.0', response: {}, request: { method: 'GET' } });
    expect(orders.records[0].intervalMs).toBe(2000);
    expect(payments).toMatchObject({ url: 'http://127.0.0.1:3002', service: 'payments', refreshMs: 30_000, events: { follow: 'poll', intervalMs: 1000 } });
  });

  it('normalises server.publicUrl to one trailing slash', async () => {
    const bare = await loadConfig(await writeConfig('server: { publicUrl: "https://gw.example.com" }\n'), {});
    expect(bare.server.publicUrl).toBe('https://gw.example.com/');
    const path = await loadConfig(await writeConfig('server: { publicUrl: "https://GW.example.com:443/api//" }\n'), {});
    expect(path.server.publicUrl).toBe('https://gw.example.com/api/');
  });
});

describe('durations and sizes', () => {
  it('parses durations to milliseconds', () => {
    expect(['500ms', '5s', '10m', '2h', '30d'].map(parseDuration)).toEqual([500, 5000, 600_000, 7_200_000, 2_592_000_000]);
  });

  it('parses sizes to bytes, binary units', () => {
    expect(['10b', '512kb', '1mb', '1MB', '2gb'].map(parseSize)).toEqual([10, 524_288, 1_048_576, 1_048_576, 2 * 2 ** 30]);
  });

  it('refuses anything else', () => {
    expect(() => parseDuration('5 s')).toThrow(RangeError);
    expect(() => parseDuration('1.5s')).toThrow(RangeError);
    expect(() => parseSize('1mib')).toThrow(RangeError);
  });

  it('applies them from the config', async () => {
    const config = await loadConfig(await writeConfig('sse: { maxBufferedBytes: 512kb, keepalive: 500ms }\nevents: { retention: { maxAge: 2h } }\n'), {});
    expect(config.sse.maxBufferedBytes).toBe(524_288);
    expect(config.sse.keepaliveMs).toBe(500);
    expect(config.events.retention.maxAgeMs).toBe(7_200_000);
  });
});

describe('problems are reported at their line and column', () => {
  it('a wrong type', async () => {
    expect(where(await problemsOf('server:\n  port: eighty\n'))).toEqual([[2, 9, 'server.port: must be integer, not string "eighty"']]);
  });

  it('a console.path on one of the gateway\'s own routes', async () => {
    expect(where(await problemsOf('console:\n  path: /events/live\n'))).toEqual([[2, 9, "console.path: /events is the gateway's own route; choose another path (e.g. /console)"]]);
    expect(where(await problemsOf('console:\n  path: /metrics\n'))).toEqual([[2, 9, "console.path: /metrics is the gateway's own route; choose another path (e.g. /console)"]]);
  });

  it('a wildcard server.host without server.publicUrl: the advertised URLs would be http://0.0.0.0:…', async () => {
    for (const host of ['0.0.0.0', '"::"', '"[::]"', '"0:0:0:0:0:0:0:0"']) {
      const [problem] = await problemsOf(`server:\n  host: ${host}\n`);
      expect(problem?.message).toMatch(/^server\.host: .* binds every interface, so server.publicUrl must be set/);
      expect(problem?.line).toBe(2);
    }
    // Set, or a specific address: fine.
    expect((await loadConfig(await writeConfig('server:\n  host: 0.0.0.0\n  publicUrl: https://gw.test/\n'))).server.host).toBe('0.0.0.0');
    expect((await loadConfig(await writeConfig('server:\n  host: 10.1.2.3\n'))).server.host).toBe('10.1.2.3');
  });

  it('storage.redis.cluster with what a cluster cannot route (sentinels, WAIT, WAITAOF); alone it loads', async () => {
    const cluster = 'storage:\n  driver: redis\n  redis:\n    cluster: [{ host: 127.0.0.1, port: 7000 }]\n';
    const messages = (await problemsOf(`${cluster}    waitReplicas: 1\n    waitAof: true\n    sentinels: [{ host: 127.0.0.1, port: 26379 }]\n    name: m\n`)).map((p) => p.message);
    expect(messages.sort()).toEqual([
      'storage.redis.cluster: cannot be combined with storage.redis.sentinels',
      'storage.redis.cluster: cannot be combined with storage.redis.waitAof (yet)',
      'storage.redis.cluster: cannot be combined with storage.redis.waitReplicas (yet)',
    ]);
    expect((await loadConfig(await writeConfig(cluster))).storage.redis.cluster).toEqual([{ host: '127.0.0.1', port: 7000 }]);
  });

  it('storage.redis.cluster with a storage.url naming a database other than 0 (a cluster has only 0); /0 or none loads', async () => {
    const cluster = (url: string) => `storage:\n  driver: redis\n  url: ${url}\n  redis:\n    cluster: [{ host: 127.0.0.1, port: 7000 }]\n`;
    expect((await problemsOf(cluster('redis://127.0.0.1:7000/3'))).map((p) => p.message)).toEqual([
      'storage.url: names database 3, but a Redis Cluster (storage.redis.cluster) has only database 0: keep gateways apart with storage.prefix',
    ]);
    expect((await loadConfig(await writeConfig(cluster('redis://127.0.0.1:7000/0')))).storage.url).toBe('redis://127.0.0.1:7000/0');
    expect((await loadConfig(await writeConfig(cluster('redis://127.0.0.1:7000')))).storage.url).toBe('redis://127.0.0.1:7000');
  });

  it('a bad enum value', async () => {
    expect(where(await problemsOf('storage:\n  driver: postgres\n'))).toEqual([[2, 11, 'storage.driver: must be one of "sqlite", "memory", "redis"']]);
  });

  it('a bad duration', async () => {
    const [problem] = await problemsOf('commands:\n  dispatch:\n    retry: { schedule: [1s, 5 minutes] }\n');
    expect([problem.line, problem.column]).toEqual([3, 29]);
    expect(problem.message).toMatch(/^commands\.dispatch\.retry\.schedule\[1\]: "5 minutes" is not a duration/);
  });

  it('a bad size', async () => {
    const [problem] = await problemsOf('server:\n  bodyLimit: 1 megabyte\n');
    expect([problem.line, problem.column]).toEqual([2, 14]);
    expect(problem.message).toMatch(/server\.bodyLimit: "1 megabyte" is not a size/);
  });

  it('a YAML syntax error', async () => {
    const problems = await problemsOf('server:\n  port: 80\n  host: [a, b\nauth:\n  type: none\n');
    expect(problems).toHaveLength(1);
    expect(problems[0].line).toBe(4);
    expect(problems[0].column).toBe(1);
  });

  it('a duplicate key (a YAML error)', async () => {
    expect(where(await problemsOf('server:\n  port: 80\n  port: 81\n'))).toEqual([[3, 3, 'Map keys must be unique']]);
  });

  it('an unknown key, named by its path and pointed at the key', async () => {
    expect(where(await problemsOf('server:\n  port: 80\n  bogus: 1\n'))).toEqual([[3, 3, 'server.bogus: unknown key']]);
    const nested = legacyBackend(`    commands:
      - type: PlaceOrder
        jsonSchema: {}
        request: { path: /orders, verb: POST }
`);
    expect(where(await problemsOf(nested))).toEqual([[8, 35, 'backends[0].commands[0].request.verb: unknown key']]);
  });

  it('a legacy-only key on a proto backend', async () => {
    const text = 'backends:\n  - id: pay\n    kind: proto\n    url: http://127.0.0.1:3002\n    commands: []\n';
    expect(where(await problemsOf(text))).toEqual([[5, 5, 'backends[0].commands: unknown key']]);
  });

  it('a missing required key, at its parent', async () => {
    expect(where(await problemsOf('backends:\n  - id: pay\n    kind: proto\n'))).toEqual([[2, 5, 'backends[0]: missing required key "url"']]);
  });

  it('records[].types missing: the message says why it is required and shows the form', async () => {
    const text = legacyBackend(`    records:
      - path: /orders
        event:
          type: OrderCreatedV1
          id: "{id}"
`);
    const [problem] = await problemsOf(text);
    expect(problem.message).toMatch(/^backends\[0\]\.records\[0\]: missing required key "types": the event catalogue .* is built from it/);
    expect(problem.message).toContain('types: [OrderCreatedV1, OrderShippedV1]');
  });

  it('webhooks.secretKey and previousSecretKeys must be 32 bytes in base64', async () => {
    const short = Buffer.alloc(16, 1).toString('base64');
    const good = Buffer.alloc(32, 2).toString('base64');
    const problems = await problemsOf(`webhooks:\n  secretKey: ${short}\n  previousSecretKeys: [${good}, not-base64]\n`);
    expect(problems.map((p) => p.message)).toEqual([
      'webhooks.secretKey: must be 32 random bytes in base64 (e.g. openssl rand -base64 32)',
      'webhooks.previousSecretKeys[1]: must be 32 random bytes in base64 (e.g. openssl rand -base64 32)',
    ]);
  });

  it('a bad backend id and url', async () => {
    const text = 'backends:\n  - id: Pay_1\n    kind: proto\n    url: ftp://x\n';
    expect(where(await problemsOf(text))).toEqual([
      [2, 9, 'backends[0].id: "Pay_1" is not a backend id ([a-z][a-z0-9-]*)'],
      [4, 10, 'backends[0].url: "ftp://x" is not an absolute http(s) URL'],
    ]);
  });
});

describe('environment variables', () => {
  it('a missing variable is a problem at its value, naming it', async () => {
    const text = 'auth:\n  type: apiKey\n  keys:\n    - id: ops\n      key: "${OPS_KEY}"\n      scopes: [read]\n';
    expect(where(await problemsOf(text))).toEqual([[5, 12, 'auth.keys[0].key: environment variable OPS_KEY is not set']]);
  });

  it('substitutes values, not comments, and $${VAR} is a literal', async () => {
    const text = '# ${NOT_SET} in a comment is left alone\nserver:\n  host: ${HOST}\n  publicUrl: https://gw.test/\nstorage:\n  prefix: "$${HOST}-${HOST}:"\n';
    const config = await loadConfig(await writeConfig(text), { HOST: '0.0.0.0' });
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.storage.prefix).toBe('${HOST}-0.0.0.0:');
  });

  it('a plain ${VAR} takes the type of its value; a quoted one stays a string', async () => {
    const config = await loadConfig(await writeConfig('server:\n  port: ${PORT}\nauth:\n  type: apiKey\n  keys: [{ id: ops, key: "${KEY}", scopes: [read] }]\n'), {
      PORT: '9000',
      KEY: '12345',
    });
    expect(config.server.port).toBe(9000);
    expect(config.auth.keys[0].key).toBe('12345');
  });
});

describe('mappings and embedded schemas are compiled at load', () => {
  it('a bad JSONata expression, at its key with the offset of the error', async () => {
    const text = legacyBackend(`    queries:
      - schema: list-orders
        request: { path: /orders }
        result: "{ 'orders': response.items"
`);
    const [problem] = await problemsOf(text);
    expect(problem.line).toBe(8);
    expect(problem.column).toBeGreaterThan(17);
    expect(problem.message).toMatch(/^backends\[0\]\.queries\[0\]\.result: invalid JSONata expression: /);
  });

  it('a bad template, at its key', async () => {
    const text = legacyBackend(`    records:
      - path: /orders
        types: [OrderCreatedV1]
        event:
          type: Order{$pascal(status)V1
          id: "{id}"
`);
    expect(where(await problemsOf(text))).toEqual([
      [9, 22, 'backends[0].records[0].event.type: invalid JSONata template: unclosed "{" in template "Order{$pascal(status)V1"'],
    ]);
  });

  it('a bad expression in a block scalar is reported at the value', async () => {
    const text = legacyBackend(`    commands:
      - type: PlaceOrder
        jsonSchema: {}
        request:
          path: /orders
          body: |
            { "sku": data.sku,
`);
    expect(where(await problemsOf(text)).map(([line, column]) => [line, column])).toEqual([[10, 17]]);
  });

  it('a bad inline JSON Schema', async () => {
    const text = legacyBackend(`    commands:
      - type: PlaceOrder
        jsonSchema: { type: strin }
        request: { path: /orders }
`);
    const [problem] = await problemsOf(text);
    expect([problem.line, problem.column]).toEqual([7, 21]);
    expect(problem.message).toMatch(/^backends\[0\]\.commands\[0\]\.jsonSchema: invalid JSON Schema: /);
  });

  it('schemaFile: read relative to the config; missing or invalid is a problem at the key', async () => {
    const command = (file: string) => `      - type: PlaceOrder
        schemaFile: ${file}
        request: { path: /orders }
`;
    const files = { 'schemas/place-order.json': '{ "type": "object", "required": ["sku"] }', 'schemas/broken.json': '{ "type": ' };
    const good = await loadConfig(await writeConfig(legacyBackend(`    commands:\n${command('schemas/place-order.json')}`), files), {});
    expect((good.backends[0] as LegacyBackendConfig).commands[0].jsonSchema).toEqual({ type: 'object', required: ['sku'] });

    const missing = await problemsOf(legacyBackend(`    commands:\n${command('schemas/nope.json')}`), {}, files);
    expect(where(missing).map(([l, c]) => [l, c])).toEqual([[7, 21]]);
    expect(missing[0].message).toMatch(/^backends\[0\]\.commands\[0\]\.schemaFile: cannot read .*nope\.json: ENOENT/);

    const broken = await problemsOf(legacyBackend(`    commands:\n${command('schemas/broken.json')}`), {}, files);
    expect(broken[0].message).toMatch(/broken\.json is not valid JSON/);
  });

  it('a schema file whose content is not a valid JSON Schema', async () => {
    const text = legacyBackend(`    records:
      - path: /orders
        types: [OrderCreatedV1]
        schema: bad.json
        event: { type: OrderCreatedV1, id: "{id}" }
`);
    const [problem] = await problemsOf(text, {}, { 'bad.json': '{ "type": 12 }' });
    expect([problem.line, problem.column]).toEqual([8, 17]);
    expect(problem.message).toMatch(/^backends\[0\]\.records\[0\]\.schema: invalid JSON Schema/);
  });

  it('jsonSchema and schemaFile together', async () => {
    const text = legacyBackend(`    commands:
      - type: PlaceOrder
        jsonSchema: {}
        schemaFile: x.json
        request: { path: /orders }
`);
    const problems = await problemsOf(text, {}, { 'x.json': '{}' });
    expect(where(problems)).toEqual([[6, 9, 'backends[0].commands[0]: needs exactly one of jsonSchema or schemaFile']]);
  });
});

describe('relative paths', () => {
  it('are resolved against the config file directory', async () => {
    const pem = readFileSync(new URL('../fixtures/tls/ca.pem', import.meta.url), 'utf8');
    const file = await writeConfig('storage: { path: db/gw.db }\nwebhooks: { ca: ../certs/ca.pem }\n', { '../certs/ca.pem': pem });
    const config = await loadConfig(file, {});
    expect(config.storage.path).toBe(join(dirname(file), 'db/gw.db'));
    expect(config.webhooks.ca).toBe(join(dirname(file), '../certs/ca.pem'));
  });

  it('absolute paths are kept', async () => {
    const config = await loadConfig(await writeConfig('storage: { path: /var/lib/pgw/gw.db }\n'), {});
    expect(config.storage.path).toBe('/var/lib/pgw/gw.db');
  });
});

describe('semantic checks', () => {
  it('duplicate backend ids', async () => {
    const text = 'backends:\n  - { id: a, kind: proto, url: "http://127.0.0.1:1" }\n  - { id: a, kind: proto, url: "http://127.0.0.1:2", service: b }\n';
    expect(where(await problemsOf(text))).toEqual([[3, 11, 'backends[1].id: duplicate backend id "a", also backends[0]']]);
  });

  it('one command type declared by two legacy backends', async () => {
    const backend = (id: string) => `  - id: ${id}
    kind: legacy
    url: http://127.0.0.1:3001
    commands:
      - { type: PlaceOrder, jsonSchema: {}, request: { path: /orders } }
`;
    const problems = await problemsOf(`backends:\n${backend('a')}${backend('b')}`);
    expect(where(problems)).toEqual([[11, 17, 'backends[1].commands[0].type: command type PlaceOrder is already declared at backends[0].commands[0]']]);
  });

  it('apiKey or bearer without keys', async () => {
    expect(where(await problemsOf('auth:\n  type: bearer\n'))).toEqual([[2, 9, 'auth.type: auth type bearer needs at least one entry in auth.keys']]);
  });

  it('a bad CIDR and a publicUrl with a query', async () => {
    const problems = await problemsOf('server: { publicUrl: "https://gw.example.com/?x=1" }\nwebhooks: { allowPrivateNetworks: [127.0.0.0/33] }\n');
    expect(problems.map((p) => p.message)).toEqual([
      'server.publicUrl: must not have a query or a fragment',
      'webhooks.allowPrivateNetworks[0]: "127.0.0.0/33" is not a CIDR block (e.g. 10.0.0.0/8)',
    ]);
  });
});

describe('files read only once running', () => {
  it('refuses a webhooks.ca that does not exist or is not a PEM certificate, and accepts one that is', async () => {
    const missing = await problemsOf('webhooks: { ca: ./missing.pem }\n');
    expect(missing.map((p) => p.message)).toEqual([expect.stringMatching(/^webhooks\.ca: cannot read .*missing\.pem: ENOENT$/)]);
    const garbage = await problemsOf('webhooks: { ca: ./ca.pem }\n', {}, { 'ca.pem': 'not a certificate' });
    expect(garbage.map((p) => p.message)).toEqual([expect.stringMatching(/holds no PEM certificate$/)]);
    const pem = readFileSync(new URL('../fixtures/tls/ca.pem', import.meta.url), 'utf8');
    const config = await loadConfig(await writeConfig('webhooks: { ca: ./ca.pem }\n', { 'ca.pem': pem }));
    expect(config.webhooks.ca).toMatch(/ca\.pem$/);
  });
});

describe('reporting', () => {
  it('reports every problem at once, in file order', async () => {
    const text = `server:
  port: -1
  bogus: true
auth:
  type: apiKey
  keys:
    - { id: ops, key: "\${MISSING}", scopes: [read, fly] }
sse:
  keepalive: soon
${legacyBackend(`    queries:
      - schema: list-orders
        request: { path: "/orders/{", query: "params." }
`)}`;
    const problems = await problemsOf(text);
    expect(problems.map((p) => [p.line, p.message.split(':')[0]])).toEqual([
      [2, 'server.port'],
      [3, 'server.bogus'],
      [7, 'auth.keys[0].key'],
      [7, 'auth.keys[0].scopes[1]'],
      [9, 'sse.keepalive'],
      [16, 'backends[0].queries[0].request.path'],
      [16, 'backends[0].queries[0].request.query'],
    ]);
    expect(problems.every((p) => p.file.endsWith('gateway.yaml'))).toBe(true);
  });

  it('formats one file:line:col: message line per problem', () => {
    const problems = [
      { file: 'gw.yaml', line: 2, column: 9, message: 'server.port: must be integer' },
      { file: 'gw.yaml', line: 3, column: 3, message: 'server.bogus: unknown key' },
    ];
    expect(formatProblems(problems)).toBe('gw.yaml:2:9: server.port: must be integer\ngw.yaml:3:3: server.bogus: unknown key');
  });

  it('a file that does not exist rejects with the file system error, not a ConfigError', async () => {
    await expect(loadConfig(join(dir, 'nope.yaml'), {})).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
