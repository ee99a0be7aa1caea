import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { envelope, FAST_DISPATCH, post } from '../commands/support.ts';

afterEach(closeAll);

describe('backend addresses never reach public answers (regression)', () => {
  it('not in failure events, not in error bodies', async () => {
    const port = await freePort();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}
backends:
  - id: shop
    kind: legacy
    url: "http://127.0.0.1:${port}"
    commands:
      - type: PingShop
        version: "1.0"
        jsonSchema: { type: object }
        request: { method: POST, path: /ping }
    queries:
      - schema: stock
        version: "1.0"
        request: { method: GET, path: /stock }
  - { id: pay, kind: proto, url: "http://127.0.0.1:${port}" }`));
    const { body } = await post(`${gw.url}commands`, envelope('PingShop', 'ping-shop/1.0', {}));
    const [failed] = await eventually(async () => {
      const { events } = (await getJson(`${gw.url}events?correlationId=${body.id}`)).body;
      return events.length > 0 && events;
    });
    expect(failed.type).toBe('PingShopFailedV1');
    expect(failed.data.error.message).toContain('ECONNREFUSED');
    const answers = [
      JSON.stringify(failed),
      JSON.stringify((await getJson(`${gw.url}queries/stock`)).body),
      JSON.stringify((await getJson(`${gw.url}services/pay/anything`)).body),
    ];
    for (const text of answers) expect(text).not.toContain(`:${port}`);
    expect(answers[1]).toContain('BACKEND_UNAVAILABLE');
  });
});
