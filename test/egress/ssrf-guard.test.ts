import { afterEach, describe, expect, it } from 'vitest';
import { SsrfGuard, type RefusalReason } from '../../src/egress/ssrf-guard.ts';
import { isProtoError } from '../../src/errors.ts';
import { closeAll, gatewayYaml, startTestGateway } from '../support/gateway.ts';
import { metricValue, startTrap, subscribe, tableResolver } from '../bridges/webhooks/support.ts';

afterEach(closeAll);

/** The refusal reason of `guard.check(url)`, or 'accepted'. */
async function verdict(guard: SsrfGuard, url: string): Promise<RefusalReason | 'accepted'> {
  try {
    await guard.check(url);
    return 'accepted';
  } catch (err) {
    if (!isProtoError(err) || err.code !== 'WEBHOOK_URL_REJECTED') throw err;
    expect(err.status).toBe(400);
    return err.details?.reason as RefusalReason;
  }
}

// Names of the test resolver: each resolves to one address of a class (no DNS leaves the process).
const table: Record<string, string[]> = {
  'public.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'loopback.test': ['127.0.0.1'],
  'private10.test': ['10.1.2.3'],
  'private172.test': ['172.16.0.1'],
  'private192.test': ['192.168.1.1'],
  'metadata.test': ['169.254.169.254'],
  'cgnat.test': ['100.64.0.1'],
  'ula.test': ['fd00::1'],
  'linklocal6.test': ['fe80::1'],
  'loopback6.test': ['::1'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'mixed.test': ['93.184.216.34', '10.0.0.1'],
  'empty.test': [],
};

describe('SSRF guard: scheme, user-info, host', () => {
  const guard = new SsrfGuard({ resolver: tableResolver(table) });

  it.each([
    ['http://public.test/hook', 'scheme'],
    ['ftp://public.test/hook', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['gopher://public.test:70/_x', 'scheme'],
    ['javascript:alert(1)', 'scheme'],
    ['https://user:pass@public.test/hook', 'userinfo'],
    ['https://user@public.test/hook', 'userinfo'],
    ['https://:pass@public.test/hook', 'userinfo'],
    ['not a url', 'host'],
    ['/relative/path', 'host'],
    ['https://localhost/hook', 'host'],
    ['https://LOCALHOST./hook', 'host'],
    ['https://api.localhost/hook', 'host'],
    ['https://printer.local/hook', 'host'],
    ['https://intranet/hook', 'host'],
    ['https://nothing-here.invalid/hook', 'unresolvable'],
    ['https://empty.test/hook', 'unresolvable'],
  ])('%s → %s', async (url, reason) => {
    expect(await verdict(guard, url)).toBe(reason);
  });

  it('accepts https to a public host, and http only with allowHttp', async () => {
    expect(await verdict(guard, 'https://public.test/hook')).toBe('accepted');
    const withHttp = new SsrfGuard({ allowHttp: true, resolver: tableResolver(table) });
    expect(await verdict(withHttp, 'http://public.test/hook')).toBe('accepted');
    expect(await verdict(withHttp, 'ftp://public.test/hook')).toBe('scheme');
  });
});

describe('SSRF guard: addresses', () => {
  const addressCases: Array<[string, string]> = [
    ['loopback', 'https://127.0.0.1/'],
    ['loopback, other /8 address', 'https://127.255.0.9/'],
    ['loopback, decimal', 'https://2130706433/'],
    ['loopback, hex', 'https://0x7f000001/'],
    ['loopback, octal', 'https://0177.0.0.1/'],
    ['loopback, shortened', 'https://127.1/'],
    ['loopback, mixed notations', 'https://0x7f.0.0.01/'],
    ['loopback IPv6', 'https://[::1]/'],
    ['IPv4-mapped loopback, dotted', 'https://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped loopback, hex', 'https://[::ffff:7f00:1]/'],
    ['IPv4-compatible loopback', 'https://[::127.0.0.1]/'],
    ['unspecified', 'https://0.0.0.0/'],
    ['unspecified, decimal', 'https://0/'],
    ['unspecified IPv6', 'https://[::]/'],
    ['private 10/8', 'https://10.0.0.1/'],
    ['private 172.16/12', 'https://172.31.255.255/'],
    ['private 192.168/16', 'https://192.168.0.1/'],
    ['private, hex', 'https://0xa000001/'],
    ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/'],
    ['link-local (cloud metadata)', 'https://169.254.169.254/'],
    ['link-local metadata, decimal', 'https://2852039166/'],
    ['link-local IPv6', 'https://[fe80::1]/'],
    ['unique-local IPv6', 'https://[fc00::1]/'],
    ['unique-local IPv6 fd', 'https://[fd12:3456::1]/'],
    ['multicast', 'https://224.0.0.1/'],
    ['multicast IPv6', 'https://[ff02::1]/'],
    ['broadcast', 'https://255.255.255.255/'],
    ['carrier-grade NAT', 'https://100.64.0.1/'],
    ['reserved 240/4', 'https://240.0.0.1/'],
    ['documentation TEST-NET-1', 'https://192.0.2.1/'],
    ['documentation TEST-NET-2', 'https://198.51.100.1/'],
    ['documentation TEST-NET-3', 'https://203.0.113.1/'],
    ['documentation IPv6', 'https://[2001:db8::1]/'],
    ['benchmarking', 'https://198.18.0.1/'],
    ['NAT64 of loopback', 'https://[64:ff9b::7f00:1]/'],
    ['6to4', 'https://[2002:7f00:1::1]/'],
    ['name → loopback', 'https://loopback.test/'],
    ['name → 10/8', 'https://private10.test/'],
    ['name → 172.16/12', 'https://private172.test/'],
    ['name → 192.168/16', 'https://private192.test/'],
    ['name → metadata', 'https://metadata.test/'],
    ['name → CGNAT', 'https://cgnat.test/'],
    ['name → unique-local', 'https://ula.test/'],
    ['name → link-local IPv6', 'https://linklocal6.test/'],
    ['name → ::1', 'https://loopback6.test/'],
    ['name → IPv4-mapped loopback', 'https://mapped.test/'],
    ['name → one public and one private address', 'https://mixed.test/'],
  ];

  it.each(addressCases)('refuses %s (%s) with reason address', async (_name, url) => {
    const guard = new SsrfGuard({ resolver: tableResolver(table) });
    expect(await verdict(guard, url)).toBe('address');
  });

  it('never calls the resolver for an IP literal, and calls it once per name', async () => {
    const resolver = tableResolver(table);
    const guard = new SsrfGuard({ resolver });
    await verdict(guard, 'https://0x7f000001/');
    await verdict(guard, 'https://[::ffff:7f00:1]/');
    expect(resolver.calls).toEqual([]);
    await verdict(guard, 'https://mixed.test/');
    expect(resolver.calls).toEqual(['mixed.test']);
  });

  it('accepts public unicast addresses, IPv4 and IPv6', async () => {
    const guard = new SsrfGuard({ resolver: tableResolver(table) });
    for (const url of ['https://public.test/', 'https://93.184.216.34/', 'https://[2606:2800:220:1:248:1893:25c8:1946]/']) {
      expect(await verdict(guard, url), url).toBe('accepted');
    }
  });

  it('exempts the allowPrivateNetworks CIDRs, also for IPv4-mapped forms, and nothing else', async () => {
    const guard = new SsrfGuard({ allowPrivateNetworks: ['127.0.0.0/8', 'fd00::/8'], resolver: tableResolver(table) });
    expect(await verdict(guard, 'https://127.0.0.1/')).toBe('accepted');
    expect(await verdict(guard, 'https://[::ffff:127.0.0.1]/')).toBe('accepted');
    expect(await verdict(guard, 'https://ula.test/')).toBe('accepted');
    expect(await verdict(guard, 'https://10.0.0.1/')).toBe('address');
    expect(await verdict(guard, 'https://[::1]/')).toBe('address');
  });

  it('reports each refusal with its reason', async () => {
    const reasons: string[] = [];
    const guard = new SsrfGuard({ resolver: tableResolver(table), onRefusal: (r) => reasons.push(r) });
    await verdict(guard, 'http://public.test/');
    await verdict(guard, 'https://a:b@public.test/');
    await verdict(guard, 'https://x.invalid/');
    await verdict(guard, 'https://127.0.0.1/');
    expect(reasons).toEqual(['scheme', 'userinfo', 'unresolvable', 'address']);
  });
});

describe('SSRF guard at registration (POST /subscriptions)', () => {
  it('refuses every class with 400 WEBHOOK_URL_REJECTED, attempts no connection and sends no DNS query', async () => {
    const trap = await startTrap();
    const resolver = tableResolver({ ...table, 'trap.test': ['127.0.0.1'] });
    const gw = await startTestGateway(gatewayYaml('webhooks: { allowHttp: true }'), {}, undefined, { resolver });
    const p = trap.port;
    const cases: Array<[string, string]> = [
      [`ftp://127.0.0.1:${p}/`, 'scheme'],
      [`http://user:pw@127.0.0.1:${p}/`, 'userinfo'],
      [`http://localhost:${p}/`, 'host'],
      [`http://nowhere.invalid:${p}/`, 'unresolvable'],
      [`http://127.0.0.1:${p}/`, 'address'],
      [`http://2130706433:${p}/`, 'address'],
      [`http://0x7f000001:${p}/`, 'address'],
      [`http://0177.0.0.1:${p}/`, 'address'],
      [`http://127.1:${p}/`, 'address'],
      [`http://[::ffff:127.0.0.1]:${p}/`, 'address'],
      [`http://[::ffff:7f00:1]:${p}/`, 'address'],
      [`http://[::1]:${p}/`, 'address'],
      [`http://trap.test:${p}/`, 'address'],
      [`http://metadata.test:${p}/latest/meta-data/`, 'address'],
    ];
    for (const [url, reason] of cases) {
      const res = await subscribe(gw, { webhook: { url } });
      expect(res.status, url).toBe(400);
      expect(res.body.error, url).toMatchObject({ code: 'WEBHOOK_URL_REJECTED', details: { reason } });
    }
    // Only names reach the (injected) resolver; literals never do.
    expect(resolver.calls.sort()).toEqual(['metadata.test', 'nowhere.invalid', 'trap.test']);
    expect(trap.connections()).toBe(0);
    expect(await metricValue(gw, 'proto_gateway_webhook_ssrf_refusals_total', { reason: 'address' })).toBe(10);
    expect(await metricValue(gw, 'proto_gateway_webhook_ssrf_refusals_total', { reason: 'unresolvable' })).toBe(1);
    expect((await (await fetch(`${gw.url}subscriptions`)).json()).subscriptions).toEqual([]);
  });
});
