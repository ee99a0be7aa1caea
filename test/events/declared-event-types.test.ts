/**
 * A proto backend's own event catalogue is read at start and every `refresh`: a type it declares
 * with a `dataschema` is listed typed, with the gateway's public `dataschema`, and its schema is
 * served at `GET /events/{schema}/{version}` before any event of the type was seen.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { protoBackend, scriptedBackend, sendJson } from '../commands/support.ts';

afterEach(closeAll);

const PICKED_SCHEMA = { type: 'object', required: ['parcel'], properties: { parcel: { type: 'string' } } };

async function parcelsBackend() {
  let url = '';
  const backend = await scriptedBackend((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/commands') return sendJson(res, 200, { commands: [] });
    if (path === '/events/catalogue') {
      return sendJson(res, 200, {
        events: [
          { schema: 'parcel-picked', version: '1', dataschema: `${url}events/parcel-picked/1`, description: 'A parcel was picked up' },
          { schema: 'parcel-lost', version: '2', description: 'untyped: no dataschema' },
          { schema: '../escape', version: '1', dataschema: `${url}x` },
          { schema: 'odd-version', version: '1.0', dataschema: `${url}y` },
        ],
      });
    }
    if (path === '/events/parcel-picked/1') return sendJson(res, 200, PICKED_SCHEMA);
    if (path === '/events') return sendJson(res, 200, { events: [] });
    sendJson(res, 404, {});
  });
  url = `${backend.url}/`;
  return backend;
}

describe('event types a proto backend declares', () => {
  it('are listed from its catalogue (typed with the public dataschema) and their schema served before the first event', async () => {
    const backend = await parcelsBackend();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${protoBackend(backend.url, 'parcels')}`));
    const listed = await eventually(async () => {
      const { body } = await getJson(`${gw.url}events/catalogue`);
      return body.events.some((e: { schema: string }) => e.schema === 'parcel-picked') && body.events;
    });
    expect(listed).toEqual(expect.arrayContaining([
      expect.objectContaining({ schema: 'parcel-picked', version: '1', dataschema: `${gw.url}events/parcel-picked/1` }),
    ]));
    const lost = listed.find((e: { schema: string }) => e.schema === 'parcel-lost');
    expect(lost).toMatchObject({ schema: 'parcel-lost', version: '2' });
    expect(lost.dataschema).toBeUndefined();
    expect(listed.map((e: { schema: string }) => e.schema)).not.toContain('../escape');
    expect(listed.map((e: { schema: string }) => e.schema)).not.toContain('odd-version');
    const schema = await getJson(`${gw.url}events/parcel-picked/1`);
    expect(schema.status).toBe(200);
    expect(schema.body).toMatchObject(PICKED_SCHEMA);
    expect((await getJson(`${gw.url}events`)).body.events).toEqual([]);
    expect((await getJson(`${gw.url}services/parcels/events/catalogue`)).body.events.map((e: { schema: string }) => e.schema).sort()).toEqual(['parcel-lost', 'parcel-picked']);
  });
});
