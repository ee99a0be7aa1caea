/**
 * Webhook operations (issues 26 and 28): generated `whsec_` secrets and the refusal of any other
 * form, resending one event under its original `webhook-id`, and secret rotation with an overlap
 * verified with the `standardwebhooks` reference library, with secrets encrypted at rest.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../../support/gateway.ts';
import { appendEvents, startReceiver, subscribe, tableResolver, webhooksYaml, type ReceivedRequest } from './support.ts';

afterEach(closeAll);

const auth = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }`;
const alice = { 'X-Api-Key': 'alice-key' };
const resolver = () => tableResolver({ 'receiver.test': ['127.0.0.1'] });

async function gateway(extra = '', storage?: string) {
  return startTestGateway(gatewayYaml(`${auth}\n${webhooksYaml('[50ms]', extra)}`, storage), {}, undefined, { resolver: resolver() });
}

async function post(gw: { url: string }, path: string, body?: unknown, headers: Record<string, string> = alice): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** True when `secret` verifies `req` with the reference library. */
function verifies(secret: string, req: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(req.body, req.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

const whsec = (bytes: number) => `whsec_${randomBytes(bytes).toString('base64')}`;

describe('secrets in the Standard Webhooks form (issue 26)', () => {
  it('generates a whsec_ secret when none is given, returns it once, and signs with it', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    const created = await subscribe(gw, { webhook: { url: receiver.url() } }, alice);
    expect(created.status).toBe(201);
    const secret: string = created.body.webhook.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(JSON.stringify((await getJson(`${gw.url}subscriptions/${created.body.id}`, { headers: alice })).body)).not.toContain(secret.slice(6));
    expect(JSON.stringify((await getJson(`${gw.url}subscriptions`, { headers: alice })).body)).not.toContain(secret.slice(6));
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.length === 1);
    expect(verifies(secret, receiver.requests[0]!)).toBe(true);
    const given = whsec(24);
    const withSecret = await subscribe(gw, { webhook: { url: receiver.url(), secret: given } }, alice);
    expect(withSecret.status).toBe(201);
    expect(withSecret.body.webhook).toEqual({ url: receiver.url() });
  });

  it('refuses a secret in any other form with 400 INVALID_PARAMETER naming webhook.secret', async () => {
    const gw = await gateway();
    for (const secret of ['a raw secret of enough length for hmac', `whsec_${'!'.repeat(40)}`, whsec(16), whsec(65), 'whsec_', `whsec_${'A'.repeat(42)}-_`, whsec(32).replace(/=+$/, '')]) {
      const res = await subscribe(gw, { webhook: { url: 'http://receiver.test/', secret } }, alice);
      expect(res.status, secret).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter: 'webhook.secret' } });
      if (secret.length > 10) expect(JSON.stringify(res.body)).not.toContain(secret);
    }
  });
});

describe('POST /subscriptions/{id}/events/{eventId}/resend', () => {
  it('delivers one event of the log again under the same webhook-id', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    const { id, webhook } = (await subscribe(gw, { webhook: { url: receiver.url() }, filter: { types: ['OrderPlacedV1'] } }, alice)).body;
    const [eventId, shipped] = await appendEvents(gw, 'OrderPlacedV1', 'OrderShippedV1');
    await eventually(() => receiver.requests.length === 1);
    await eventually(async () => (await getJson(`${gw.url}subscriptions/${id}/deliveries?status=succeeded`, { headers: alice })).body.deliveries.length === 1);

    const res = await post(gw, `subscriptions/${id}/events/${eventId}/resend`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: receiver.requests[0]!.headers['webhook-id'], eventId, status: 'pending', attempts: 0 });
    await eventually(() => receiver.requests.length === 2);
    expect(receiver.requests[1]!.headers['webhook-id']).toBe(receiver.requests[0]!.headers['webhook-id']);
    expect(JSON.parse(receiver.requests[1]!.body).id).toBe(eventId);
    expect(verifies(webhook.secret, receiver.requests[1]!)).toBe(true);

    expect((await post(gw, `subscriptions/${id}/events/no-such-event/resend`)).body.error.code).toBe('NOT_FOUND');
    const filtered = await post(gw, `subscriptions/${id}/events/${shipped}/resend`);
    expect(filtered.status).toBe(409);
    expect(filtered.body.error).toMatchObject({ code: 'CONFLICT', details: { type: 'OrderShippedV1' } });
    expect((await post(gw, `subscriptions/${id}/events/${eventId}/resend`, undefined, { 'X-Api-Key': 'bob-key' })).status).toBe(404);
    expect((await post(gw, `subscriptions/${id}/events/${eventId}/resend`, undefined, { 'X-Api-Key': 'read-key' })).status).toBe(403);
  });

  it('queues an event that was never delivered to the subscription (appended before it existed)', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    const [before] = await appendEvents(gw, 'OrderPlacedV1');
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } }, alice)).body;
    expect((await post(gw, `subscriptions/${id}/events/${before}/resend`)).status).toBe(202);
    await eventually(() => receiver.requests.length === 1);
    expect(JSON.parse(receiver.requests[0]!.body).id).toBe(before);
  });

  it('refuses a disabled subscription with 409', async () => {
    const gw = await gateway();
    const receiver = await startReceiver(() => ({ status: 410 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } }, alice)).body;
    const [eventId] = await appendEvents(gw, 'OrderPlacedV1');
    await eventually(async () => (await getJson(`${gw.url}subscriptions/${id}`, { headers: alice })).body.status === 'disabled');
    const res = await post(gw, `subscriptions/${id}/events/${eventId}/resend`);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toContain('enable');
  });
});

describe('POST /subscriptions/{id}/secret/rotate', () => {
  it('signs with both secrets during the overlap, then only the new one, and deletes the old one from the store (encrypted at rest)', async () => {
    const path = join(tempDir(), 'gateway.db');
    const gw = await gateway(`  secretKey: ${randomBytes(32).toString('base64')}\n`, `storage: { driver: sqlite, path: ${path} }`);
    const receiver = await startReceiver();
    const old = whsec(32);
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url(), secret: old } }, alice)).body;

    const rotated = await post(gw, `subscriptions/${id}/secret/rotate`, { overlap: '3s' });
    expect(rotated.status).toBe(200);
    const fresh: string = rotated.body.secret;
    expect(fresh).toMatch(/^whsec_/);
    expect(Date.parse(rotated.body.previousSecretExpiresAt)).toBeGreaterThan(Date.now());
    expect((await getJson(`${gw.url}subscriptions/${id}`, { headers: alice })).body.previousSecretExpiresAt).toBe(rotated.body.previousSecretExpiresAt);
    const rows = () => {
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        return db.prepare('SELECT secret, previous_secret FROM webhook_subscriptions WHERE id = ?').get(id) as { secret: string; previous_secret: string | null };
      } finally {
        db.close();
      }
    };
    expect(rows().previous_secret).toMatch(/^pgwsec1\./);
    expect(JSON.stringify(rows())).not.toContain(old.slice(6));

    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.length === 1);
    const during = receiver.requests[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(fresh, during)).toBe(true);
    expect(verifies(old, during)).toBe(true);

    await eventually(async () => (await getJson(`${gw.url}subscriptions/${id}`, { headers: alice })).body.previousSecretExpiresAt === undefined, 20_000, 200);
    expect(rows().previous_secret).toBeNull();
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.length === 2);
    const after = receiver.requests[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(fresh, after)).toBe(true);
    expect(verifies(old, after)).toBe(false);
  });

  it('takes a given whsec_ secret (not echoed), refuses bad bodies, and needs write on an own subscription', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } }, alice)).body;
    const given = whsec(32);
    const res = await post(gw, `subscriptions/${id}/secret/rotate`, { secret: given, overlap: '0s' });
    expect(res.status).toBe(200);
    expect(res.body.secret).toBeUndefined();
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.length === 1);
    expect(String(receiver.requests[0]!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(given, receiver.requests[0]!)).toBe(true);

    for (const [body, parameter] of [[{ secret: 'raw' }, 'secret'], [{ overlap: 'soon' }, 'overlap'], [{ overlap: '31d' }, 'overlap'], [{ overlap: 5 }, 'overlap'], [[], 'body']] as const) {
      const bad = await post(gw, `subscriptions/${id}/secret/rotate`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter } });
    }
    expect((await post(gw, `subscriptions/${id}/secret/rotate`, undefined, { 'X-Api-Key': 'bob-key' })).status).toBe(404);
    expect((await post(gw, `subscriptions/${id}/secret/rotate`, undefined, { 'X-Api-Key': 'read-key' })).status).toBe(403);
  });
});
