/**
 * The operator console end to end, in headless Chromium (Debian's `/usr/bin/chromium`, driven by
 * playwright-core; never a downloaded browser) against a real gateway in front of both example
 * backends and a real webhook receiver: sign in, see and pause/resume a backend, send a command
 * from the form generated from its schema and see its result event in the live tail, see a
 * dead-lettered delivery and re-deliver it, resend an event, recover a time range and rotate the
 * secret. A screenshot of each page goes to `test-results/`.
 */
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../bridges/webhooks/support.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend, protoBackend } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';

const SHOTS = new URL('../../test-results/console/', import.meta.url);
const KEY = 'console-ops-key';
const auth = `auth:
  type: apiKey
  queryParam: access_token
  keys:
    - { id: ops, key: ${KEY}, scopes: [read, write, admin] }`;
const webhooks = 'webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8], retry: { schedule: [50ms] }, timeout: 2s }';
const headers = { 'X-Api-Key': KEY, 'content-type': 'application/json' };

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});
afterAll(async () => browser?.close());
afterEach(closeAll);

/** Waits for `text` in the element matched by `selector` (Playwright's own polling, no sleeps). */
async function seeText(page: Page, selector: string, text: string | RegExp): Promise<void> {
  await page.locator(selector).filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true });
}

describe('operator console in a browser', () => {
  it('signs in, pauses and resumes a backend, sends a command and tails its event, re-delivers a dead letter', { timeout: 90_000 }, async () => {
    const { orders, payments } = await exampleBackends();
    // Failing answers use up the one retry and dead-letter the delivery (a 410 would also disable the
    // subscription, and a disabled subscription's deliveries cannot be retried); after the switch the receiver accepts.
    let accepting = false;
    const receiver = await startReceiver(() => ({ status: accepting ? 200 : 500 }));
    const gw = await startTestGateway(gatewayYaml(`${auth}\n${FAST_DISPATCH}\n${webhooks}\nbackends:\n${ordersBackend(orders.url)}\n${protoBackend(payments.url)}`));
    const subscription = await getJson(`${gw.url}subscriptions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ webhook: { url: `http://127.0.0.1:${receiver.port}/hook` }, filter: { types: ['OrderPlacedV1'] } }),
    });
    expect(subscription.status).toBe(201);

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) problems.push(message.text());
    });

    // Sign in: the page loads without credentials, the API calls need the key.
    await page.goto(`${gw.url}console`);
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // Backends: both example backends, with their health from /status; pause and resume one.
    await seeText(page, 'tr[data-service="orders"]', 'closed');
    await seeText(page, 'tr[data-service="payments"] [data-field="status"]', 'running');
    await shot(page, 'backends');
    // By keyboard: the page's heading has focus, the next Tab stop is the first row's button, its focus is visible.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => [document.activeElement?.getAttribute('aria-label'), getComputedStyle(document.activeElement as Element).outlineStyle])).toEqual(['Pause orders', 'solid']);
    await page.keyboard.press('Enter');
    await seeText(page, 'tr[data-service="orders"] [data-field="status"]', 'paused');
    expect((await getJson(`${gw.url}services/orders`, { headers })).body.status).toBe('paused');
    await page.getByRole('button', { name: 'Resume orders' }).click();
    await seeText(page, 'tr[data-service="orders"] [data-field="status"]', 'running');
    expect((await getJson(`${gw.url}services/orders`, { headers })).body.status).toBe('running');

    // The live tail starts and keeps running while other pages are shown.
    await page.getByRole('link', { name: 'Live tail' }).click();
    await seeText(page, '[role="status"]', 'Live');

    // Catalogue: the form generated from PlaceOrder's schema sends it and follows its events.
    await page.getByRole('link', { name: 'Catalogue' }).click();
    await page.getByRole('button', { name: 'place-order v1.0' }).click();
    await page.getByLabel('sku').fill('widget');
    await page.getByLabel('qty').fill('2');
    await page.getByRole('button', { name: 'Send command' }).click();
    const correlationId = await page.locator('[data-correlation-id]').getAttribute('data-correlation-id', { timeout: 15_000 });
    expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);
    await seeText(page, '.follow .events li', 'OrderPlacedV1');
    await shot(page, 'catalogue');

    // Live tail: the command's result event, its envelope in the inspector.
    await page.getByRole('link', { name: 'Live tail' }).click();
    const row = page.locator('tr[data-type="OrderPlacedV1"]').filter({ hasText: correlationId as string });
    await row.waitFor({ timeout: 15_000 });
    await row.getByRole('button', { name: 'OrderPlacedV1' }).click();
    await seeText(page, '.inspector pre', `"correlationid": "${correlationId}"`);
    await shot(page, 'tail');

    // Webhooks: the OrderPlacedV1 delivery was refused until no attempt was left: a dead letter; re-deliver it.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const deadButton = page.getByRole('button', { name: /^Re-deliver OrderPlacedV1/ });
    await deadButton.waitFor({ timeout: 15_000 });
    await shot(page, 'webhooks');
    const refused = receiver.requests.length;
    expect(refused).toBeGreaterThan(0);
    accepting = true;
    await deadButton.click();
    await eventually(() => receiver.requests.length > refused);
    expect(JSON.parse(receiver.requests[refused].body)).toMatchObject({ type: 'OrderPlacedV1', correlationid: correlationId });
    await seeText(page, 'tr[data-event] [data-field="status"]', 'succeeded');

    // Resend the event from the recent deliveries: the receiver gets it again under its webhook-id.
    const resent = receiver.requests.length;
    await page.getByRole('button', { name: /^Resend OrderPlacedV1/ }).first().click();
    await eventually(() => receiver.requests.length > resent);
    expect(receiver.requests[resent].headers['webhook-id']).toBe(receiver.requests[refused].headers['webhook-id']);

    // Recover a time range: every OrderPlacedV1 of the window once more, the progress shown.
    const beforeRecovery = receiver.requests.length;
    const recoverForm = page.getByRole('form', { name: /^Recover a time range/ });
    await recoverForm.locator('input[type="datetime-local"]').first().fill('2000-01-01T00:00');
    await recoverForm.getByRole('button', { name: 'Recover' }).click();
    await seeText(page, '[data-recovery] [data-field="recovery-status"]', 'completed');
    await eventually(() => receiver.requests.length > beforeRecovery);

    // Rotate the secret: the generated one is shown once, and the old one signs for the overlap.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await seeText(page, '[data-field="new-secret"]', /^whsec_/);
    await seeText(page, 'article[data-subscription] .sub', 'old secret signs until');
    await shot(page, 'webhooks-operations');

    // Metrics: sparklines fed by /status.
    await page.getByRole('link', { name: 'Metrics' }).click();
    await seeText(page, '.facts dt:text-is("Commands accepted") + dd', /^1$/);
    // The configuration generation and the last reload, as /status has them.
    const { config } = (await getJson(`${gw.url}status`, { headers })).body;
    await seeText(page, '[data-field="config-generation"]', config.generation.hash);
    await seeText(page, '[data-field="last-reload"]', 'none since start');
    // The console polls /status from sign-in on: the command shows as a rise in the first line.
    await page.waitForFunction(() => {
      const points = document.querySelector('.spark polyline')?.getAttribute('points') ?? '';
      return points.split(' ').some((point) => Number(point.split(',')[1]) < 38);
    }, undefined, { timeout: 15_000 });
    await shot(page, 'metrics');

    // A narrow window: nothing wider than the viewport (wide tables scroll inside their box).
    await page.setViewportSize({ width: 400, height: 800 });
    await page.getByRole('link', { name: 'Backends' }).click();
    await seeText(page, 'tr[data-service="orders"] [data-field="status"]', 'running');
    await shot(page, 'backends-narrow');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);

    expect(problems).toEqual([]);
  });
});
