import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/gateway-config.ts';
import { CONSOLE_SECURITY_HEADERS } from '../../src/console/console-routes.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

const auth = `auth:
  type: apiKey
  queryParam: access_token
  keys:
    - { id: ops, key: ops-key, scopes: [read] }`;

/** The page's script and stylesheet paths, as the built index.html references them. */
function assetsOf(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1]);
}

describe('the console is served by the gateway', () => {
  it('serves the page and its files without credentials, with a strict CSP and cache headers, while the API still needs the key', async () => {
    const gw = await startTestGateway(gatewayYaml(auth));
    const redirect = await fetch(`${gw.url}console`, { redirect: 'manual' });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get('location')).toBe('console/');

    const page = await fetch(`${gw.url}console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    for (const [name, value] of Object.entries(CONSOLE_SECURITY_HEADERS)) expect(page.headers.get(name)).toBe(value);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self';/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    // No inline script: every script has a src (CSP script-src 'self' would block anything else).
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const assets = assetsOf(html);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const res = await fetch(`${gw.url}console/${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type')).toMatch(asset.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_SECURITY_HEADERS['Content-Security-Policy']);
    }

    const config = await getJson(`${gw.url}console/config.json`);
    expect(config.body).toEqual({ auth: { type: 'apiKey', header: 'X-Api-Key', queryParam: 'access_token' }, api: '../' });
    expect(config.headers.get('cache-control')).toBe('no-cache');

    const missing = await getJson(`${gw.url}console/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
    // The console has no powers of its own: the API answers only to the key.
    expect((await fetch(`${gw.url}services`)).status).toBe(401);
    expect((await fetch(`${gw.url}services`, { headers: { 'X-Api-Key': 'ops-key' } })).status).toBe(200);
  });

  it('moves to console.path, and its API base stays relative so a path prefix in front of the gateway is kept', async () => {
    const gw = await startTestGateway(`server: { host: 127.0.0.1, port: 0, publicUrl: "https://gw.example.com/api/" }\nstorage: { driver: memory }\n${auth}\nconsole: { path: /ops/console }`);
    expect((await fetch(`${gw.url}console/`)).status).toBe(404);
    expect((await fetch(`${gw.url}ops/console/`)).status).toBe(200);
    const redirect = await fetch(`${gw.url}ops/console`, { redirect: 'manual' });
    expect(new URL(redirect.headers.get('location') as string, 'https://gw.example.com/api/ops/console').href).toBe('https://gw.example.com/api/ops/console/');
    const config = (await getJson(`${gw.url}ops/console/config.json`)).body;
    expect(config.api).toBe('../../');
    // As the browser resolves it behind a proxy serving the gateway at /api/.
    expect(new URL(config.api, 'https://gw.example.com/api/ops/console/').href).toBe('https://gw.example.com/api/');
  });

  it('answers 404 with console.enabled false', async () => {
    const gw = await startTestGateway(gatewayYaml('console: { enabled: false }'));
    expect((await fetch(`${gw.url}console/`)).status).toBe(404);
    expect((await fetch(`${gw.url}console/config.json`)).status).toBe(404);
  });

  it('refuses a console.path that is not an absolute path without a trailing slash', async () => {
    for (const path of ['console', '/console/', '/']) {
      const error = await parseConfig(gatewayYaml(`console: { path: "${path}" }`), '/tmp/gateway.yaml', {}).then(() => undefined, (err: unknown) => err);
      expect(error, path).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(/console\.path/);
    }
  });
});
