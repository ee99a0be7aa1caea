import { afterEach, describe, expect, it } from 'vitest';
import { GATEWAY_ROUTE_ROOTS } from '../../src/http/route-roots.ts';
import { closeAll, gatewayYaml, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

describe('GATEWAY_ROUTE_ROOTS (what console.path may not start with)', () => {
  it('is exactly the first segments of the routes of a gateway with every part enabled, the console apart', async () => {
    const gw = await startTestGateway(gatewayYaml('console: { path: /ops/console }\nmcp: { enabled: true }\na2a: { enabled: true }'));
    const roots = new Set(gw.routes.map((route) => route.path.split('/')[1]).filter((root) => root !== 'ops'));
    expect([...roots].sort()).toEqual([...GATEWAY_ROUTE_ROOTS].sort());
  });
});
