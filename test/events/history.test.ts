import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/app.ts';
import type { CloudEvent } from '../../src/log/EventLog.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

function event(type: string, extra: Partial<CloudEvent> = {}): CloudEvent {
  return { specversion: '1.0', id: randomUUID(), source: 'urn:test', type, datacontenttype: 'application/json', time: new Date().toISOString(), data: {}, ...extra };
}

const backends = `backends:
  - { id: alpha, kind: legacy, url: "http://127.0.0.1:9" }
  - { id: beta, kind: legacy, url: "http://127.0.0.1:9" }`;

/** A gateway whose log holds 25 events: types A/B alternating, two backends, correlation ids c0..c4, times a minute apart. */
async function seeded(): Promise<{ gw: Gateway; events: CloudEvent[] }> {
  const gw = await startTestGateway(gatewayYaml(`events: { pageSize: { default: 10, max: 20 } }\n${backends}`));
  const start = Date.parse('2026-01-01T00:00:00Z');
  const events = Array.from({ length: 25 }, (_, i) =>
    event(i % 2 ? 'ThingBV1' : 'ThingAV1', { correlationid: `c${i % 5}`, source: i < 12 ? 'urn:one' : 'urn:two', time: new Date(start + i * 60_000).toISOString(), data: { i } }),
  );
  await gw.log.append(events.map((e, i) => ({ backend: i % 3 === 0 ? 'beta' : 'alpha', event: e })));
  return { gw, events };
}

/** Every page of a query, following nextCursor. */
async function allPages(url: string): Promise<{ pages: CloudEvent[][]; ids: string[] }> {
  const pages: CloudEvent[][] = [];
  let next: string | undefined;
  do {
    const { status, body } = await getJson(next ? `${url}${url.includes('?') ? '&' : '?'}after=${encodeURIComponent(next)}` : url);
    expect(status).toBe(200);
    pages.push(body.events);
    next = body.nextCursor;
  } while (next && pages.length < 100);
  return { pages, ids: pages.flat().map((e) => e.id) };
}

describe('GET /events', () => {
  it('pages through the log in order, never skipping or repeating, with no nextCursor on the last page', async () => {
    const { gw, events } = await seeded();
    const { pages, ids } = await allPages(`${gw.url}events`);
    expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(ids).toEqual(events.map((e) => e.id));
  });

  it('applies every filter and their combinations, keeping them across pages', async () => {
    const { gw, events } = await seeded();
    const expectIds = async (query: string, keep: (e: CloudEvent, i: number) => boolean) => {
      const { ids } = await allPages(`${gw.url}events?${query}&limit=3`);
      expect(ids, query).toEqual(events.filter(keep).map((e) => e.id));
    };
    await expectIds('type=ThingBV1', (e) => e.type === 'ThingBV1');
    await expectIds('correlationId=c2', (e) => e.correlationid === 'c2');
    await expectIds('source=urn:two', (e) => e.source === 'urn:two');
    await expectIds('from=2026-01-01T00:05:00Z&to=2026-01-01T00:10:00Z', (_e, i) => i >= 5 && i <= 10);
    await expectIds('type=ThingAV1&source=urn:one&from=2026-01-01T00:04:00Z', (e, i) => e.type === 'ThingAV1' && e.source === 'urn:one' && i >= 4);
    await expectIds('correlationId=c1&type=ThingBV1', (e) => e.correlationid === 'c1' && e.type === 'ThingBV1');
  });

  it('caps a limit above the ceiling and uses the default without one', async () => {
    const { gw } = await seeded();
    expect((await getJson(`${gw.url}events?limit=500`)).body.events).toHaveLength(20);
    expect((await getJson(`${gw.url}events`)).body.events).toHaveLength(10);
  });

  it('refuses bad parameters with 400 and the error body', async () => {
    const { gw } = await seeded();
    for (const [query, code] of [
      ['limit=0', 'INVALID_PARAMETER'],
      ['limit=-3', 'INVALID_PARAMETER'],
      ['limit=2.5', 'INVALID_PARAMETER'],
      ['limit=ten', 'INVALID_PARAMETER'],
      ['from=yesterday', 'INVALID_PARAMETER'],
      ['to=2026-13-45T99:00:00Z', 'INVALID_PARAMETER'],
      ['after=garbage', 'INVALID_CURSOR'],
    ]) {
      const { status, body } = await getJson(`${gw.url}events?${query}`);
      expect(status, query).toBe(400);
      expect(body.error.code, query).toBe(code);
    }
  });

  it('refuses a cursor made for other filters, and a hand-edited one', async () => {
    const { gw } = await seeded();
    const { body } = await getJson(`${gw.url}events?type=ThingAV1&limit=2`);
    expect(body.nextCursor).toBeTypeOf('string');
    const other = await getJson(`${gw.url}events?type=ThingBV1&after=${body.nextCursor}`);
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('INVALID_CURSOR');
    const edited = Buffer.from(Buffer.from(body.nextCursor, 'base64url').toString().replace(/^\d+/, '1')).toString('base64url');
    expect((await getJson(`${gw.url}events?type=ThingAV1&after=${edited}`)).body.error.code).toBe('INVALID_CURSOR');
    expect((await getJson(`${gw.url}events?type=ThingAV1&limit=5&after=${body.nextCursor}`)).status).toBe(200);
  });

  it('serves one backend\'s events at /services/{id}/events and 404 for an unknown service', async () => {
    const { gw, events } = await seeded();
    const { ids } = await allPages(`${gw.url}services/beta/events`);
    expect(ids).toEqual(events.filter((_e, i) => i % 3 === 0).map((e) => e.id));
    const unknown = await getJson(`${gw.url}services/gamma/events`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SERVICE_NOT_FOUND');
  });
});
