/**
 * The deploy files agree with the gateway: every file under deploy/ parses; the Dockerfile builds
 * on Node 24, runs as a non-root user, checks /healthz and exposes the configured ports; the
 * compose and Kubernetes configurations pass the gateway's own validation; the probes point at
 * /readyz and /healthz on the configured port; and every PromQL expression of the dashboard and
 * the alert rules names only metrics a running gateway really exports.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { startOrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { parseConfig } from '../../src/gateway-config.ts';
import type { GatewayConfig } from '../../src/config/types.ts';
import { envelope } from '../commands/support.ts';
import { startReceiver, tableResolver } from '../bridges/webhooks/support.ts';
import { closeAll, eventually, startTestGateway, track } from '../support/gateway.ts';

afterEach(closeAll);

const root = fileURLToPath(new URL('../../', import.meta.url));
const deploy = join(root, 'deploy');
const read = (path: string): string => readFileSync(join(deploy, path), 'utf8');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [relative(deploy, path)];
  });
}

/** Every Kubernetes object of deploy/k8s, by kind. */
function k8sObjects(): Map<string, any> {
  const objects = new Map<string, any>();
  for (const file of filesUnder(join(deploy, 'k8s'))) {
    for (const doc of parseAllDocuments(read(file))) {
      const object = doc.toJS();
      if (object?.kind) objects.set(object.kind, object);
    }
  }
  return objects;
}

/** Validates gateway YAML as `proto-gateway validate` does, with `env` as the environment. */
function validate(yaml: string, file: string, env: Record<string, string>): Promise<GatewayConfig> {
  return parseConfig(yaml, join(deploy, file), env);
}

/** `${VAR:-default}` of a compose environment entry, as compose would substitute it with nothing set. */
function composeValue(value: string): string {
  return value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
}

describe('deploy files', () => {
  it('all parse: YAML (every document) and JSON', () => {
    const files = filesUnder(deploy);
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      if (/\.ya?ml$/.test(file)) {
        for (const doc of parseAllDocuments(read(file))) expect(doc.errors, file).toEqual([]);
      } else if (file.endsWith('.json')) expect(() => JSON.parse(read(file)), file).not.toThrow();
    }
  });

  it('the Dockerfile builds on Node 24, runs as non-root, checks /healthz and exposes the HTTP and gRPC ports of its config', async () => {
    const lines = read('Dockerfile').replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    const instructions = lines.map((line) => ({ op: line.split(/\s+/)[0].toUpperCase(), args: line.slice(line.indexOf(' ') + 1) }));
    const of = (op: string) => instructions.filter((i) => i.op === op).map((i) => i.args);
    for (const from of of('FROM')) expect(from).toMatch(/^node:24([.-]|\s|$)/);
    expect(of('RUN').join('\n')).toContain('npm ci --omit=dev');
    const user = of('USER').at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(of('HEALTHCHECK').join(' ')).toMatch(/\/healthz/);
    // The image's own environment (ENV) is what its default config is loaded with.
    const env = Object.fromEntries(of('ENV').map((args) => args.split('=', 2) as [string, string]));
    const config = await validate(read('gateway.yaml'), 'gateway.yaml', env);
    // Bound to 0.0.0.0: the advertised URL is the public one, never http://0.0.0.0:….
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.server.publicUrl).toBe('http://localhost:8080/');
    const exposed = of('EXPOSE').join(' ').split(/\s+/).map((p) => Number(p.split('/')[0]));
    expect(exposed).toContain(config.server.port);
    expect(exposed).toContain(config.grpc?.port);
    expect(of('HEALTHCHECK').join(' ')).toContain(`:${config.server.port}/healthz`);
    expect(of('ENTRYPOINT').join(' ')).toContain('bin/proto-gateway');
    expect(of('CMD').join(' ')).toContain('/etc/proto-gateway/gateway.yaml');
  });

  it('compose runs Redis, two gateway replicas on storage.driver redis with a valid config, and the example backends', async () => {
    const compose = parse(read('compose.yaml'), { merge: true });
    const services = compose.services as Record<string, any>;
    expect(services.redis.image).toMatch(/^redis:/);
    // What a 201 means on Redis: every write fsynced before Redis answers, kept in a volume.
    expect((services.redis.command as string[]).join(' ')).toContain('--appendonly yes --appendfsync always');
    expect(services.redis.volumes).toEqual(['redis-data:/data']);
    const gateways = Object.entries(services).filter(([, s]) => (s.volumes ?? []).some((v: string) => v.endsWith(':/etc/proto-gateway/gateway.yaml:ro')));
    expect(gateways.length).toBe(2);
    for (const [name, service] of gateways) {
      const mount = (service.volumes as string[]).find((v) => v.includes('/etc/proto-gateway/gateway.yaml')) as string;
      const file = mount.split(':')[0];
      const env = Object.fromEntries(Object.entries(service.environment as Record<string, string>).map(([k, v]) => [k, composeValue(v)]));
      const config = await validate(read(file), file, env);
      expect(config.storage.driver, name).toBe('redis');
      expect(new URL(config.storage.url as string).hostname).toBe('redis');
      expect(service.command).toEqual(['serve', '--config', '/etc/proto-gateway/gateway.yaml']);
      expect((service.ports as string[]).some((p) => p.endsWith(`:${config.server.port}`)), name).toBe(true);
      // Every backend URL names a compose service.
      for (const backend of config.backends) expect(Object.keys(services), backend.id).toContain(new URL(backend.url).hostname);
    }
    expect(services.orders.entrypoint.join(' ')).toContain('examples/orders-service.ts');
    expect(services.payments.entrypoint.join(' ')).toContain('examples/payments-service.ts');
  });

  it('Kubernetes: the ConfigMap passes validation with the Secret as environment; probes, ports, resources, HPA and PDB agree', async () => {
    const objects = k8sObjects();
    for (const kind of ['Deployment', 'ConfigMap', 'Secret', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget']) expect(objects.has(kind), kind).toBe(true);
    const config = await validate(objects.get('ConfigMap').data['gateway.yaml'], 'k8s/configmap.yaml', objects.get('Secret').stringData);
    const deployment = objects.get('Deployment');
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: config.server.port });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: config.server.port });
    expect(container.ports.map((p: any) => p.containerPort).sort()).toEqual([config.server.port, config.grpc?.port].sort());
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.resources.limits).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.envFrom).toContainEqual({ secretRef: { name: objects.get('Secret').metadata.name } });
    expect(container.args).toEqual(['serve', '--config', '/etc/proto-gateway/gateway.yaml']);
    const configVolume = pod.volumes.find((v: any) => v.configMap?.name === objects.get('ConfigMap').metadata.name);
    expect(container.volumeMounts).toContainEqual(expect.objectContaining({ name: configVolume.name, mountPath: '/etc/proto-gateway' }));
    // Live reload of ConfigMap edits: the watch is on, and the volume is a directory (a subPath mount is never updated).
    expect(config.server.watchConfig).toBe(true);
    expect(container.volumeMounts.find((m: any) => m.name === configVolume.name).subPath).toBeUndefined();
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    // The kubelet waits longer than the gateway's own shutdown deadline before SIGKILL.
    const preStopSeconds = Number(container.lifecycle?.preStop?.exec?.command?.[0] === 'sleep' ? container.lifecycle.preStop.exec.command[1] : 0);
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopSeconds * 1000 + config.server.shutdownTimeoutMs);
    const labels = deployment.spec.template.metadata.labels;
    expect(objects.get('Service').spec.selector).toEqual(labels);
    expect(objects.get('PodDisruptionBudget').spec.selector.matchLabels).toEqual(labels);
    expect(objects.get('HorizontalPodAutoscaler').spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
  });
});

/** Metric names in a PromQL expression: the identifiers of the gateway's and the process's metrics. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:proto_gateway|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]);
}

/** Every PromQL expression of the dashboard and of the alert rules, with where it comes from. */
function promqlExpressions(): Array<{ where: string; expr: string }> {
  const dashboard = JSON.parse(read('grafana/dashboard.json'));
  const fromDashboard = (dashboard.panels as any[]).flatMap((panel) => (panel.targets as any[]).map((t) => ({ where: `panel "${panel.title}"`, expr: t.expr as string })));
  const alerts = parse(read('prometheus/alerts.yaml'));
  const fromAlerts = (alerts.groups as any[]).flatMap((group) => (group.rules as any[]).map((rule) => ({ where: `alert ${rule.alert}`, expr: String(rule.expr) })));
  return [...fromDashboard, ...fromAlerts];
}

/** The metric names a scrape exports; a histogram's series carry the `_bucket`, `_sum` and `_count` suffixes. */
function exportedNames(scrape: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram' || type === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

describe('dashboard and alerts', () => {
  it('name only metrics a running gateway exports, scraped after a command, an event, an SSE stream and a webhook delivery', async () => {
    const orders = track(await startOrdersService({ port: 0 }));
    const payments = track(await startPaymentsService({ port: 0 }));
    const receiver = await startReceiver();
    // The compose gateway's own configuration, moved to loopback and the memory store.
    const config = parse(read('compose/gateway.yaml'));
    config.server = { host: '127.0.0.1', port: 0 };
    config.storage = { driver: 'memory' };
    delete config.grpc;
    config.webhooks = { allowHttp: true, allowPrivateNetworks: ['127.0.0.0/8'], retry: { schedule: ['100ms'] } };
    config.backends.find((b: any) => b.id === 'orders').url = orders.url;
    config.backends.find((b: any) => b.id === 'payments').url = payments.url;
    const key = 'test-ops-key';
    const gw = await startTestGateway(stringify(config), { OPS_KEY: key, PUBLIC_URL: 'http://gw.test/' }, undefined, {
      resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }),
    });
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const subscription = await fetch(`${gw.url}subscriptions`, { method: 'POST', headers, body: JSON.stringify({ webhook: { url: receiver.url() } }) });
    expect(subscription.status).toBe(201);
    const stream = await fetch(`${gw.url}events/stream`, { headers });
    expect(stream.status).toBe(200);
    const command = await fetch(`${gw.url}commands`, { method: 'POST', headers, body: JSON.stringify(envelope('PlaceOrder', 'place-order/1.0', { sku: 'widget', qty: 1 })) });
    expect(command.status).toBe(201);
    await eventually(() => receiver.requests.length > 0, 30_000);
    const scrape = async () => (await fetch(`${gw.url}metrics`)).text();
    // Each exercised path shows up as a sample, not only as a declared metric.
    const text = await eventually(async () => {
      const current = await scrape();
      const seen = [/proto_gateway_commands_total\{type="PlaceOrder",outcome="accepted"\} 1/, /proto_gateway_events_ingested_total\{backend="orders"/,
        /proto_gateway_sse_connections 1/, /proto_gateway_webhook_deliveries_total\{outcome="succeeded"\} [1-9]/, /proto_gateway_backend_up\{backend="payments"\} 1/];
      const missing = seen.filter((re) => !re.test(current));
      if (missing.length > 0) throw new Error(`not yet scraped: ${missing.join(', ')}`);
      return current;
    }, 30_000);
    await stream.body?.cancel();
    const exported = exportedNames(text);
    const expressions = promqlExpressions();
    expect(expressions.length).toBeGreaterThan(10);
    for (const { where, expr } of expressions) {
      const names = metricNames(expr);
      expect(names.length, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(exported.has(name), `${where} names ${name}, which the gateway does not export`).toBe(true);
    }
  }, 90_000);
});
