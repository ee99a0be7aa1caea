import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryClient } from '../../src/egress/delivery-client.ts';
import { SsrfGuard, type RefusalReason } from '../../src/egress/ssrf-guard.ts';
import { closeAll, track } from '../support/gateway.ts';
import { startReceiver, tableResolver } from '../bridges/webhooks/support.ts';

afterEach(closeAll);

/** A client whose guard allows loopback over http and counts its refusals. */
function client(timeoutMs = 5000) {
  const refusals: RefusalReason[] = [];
  const guard = new SsrfGuard({
    allowHttp: true,
    allowPrivateNetworks: ['127.0.0.0/8'],
    resolver: tableResolver({ 'receiver.test': ['127.0.0.1'], 'inside.test': ['10.0.0.7'] }),
    onRefusal: (reason) => refusals.push(reason),
  });
  return { refusals, client: track(new DeliveryClient({ guard, timeoutMs })) };
}

describe('DeliveryClient', () => {
  it('posts to an allowed URL on every attempt, the check before connecting made once per URL', async () => {
    const receiver = await startReceiver();
    const { client: c, refusals } = client();
    const url = `http://127.0.0.1:${receiver.port}/hook`;
    for (let i = 0; i < 3; i++) expect(await c.post(url, { 'content-type': 'application/json' }, `{"n":${i}}`)).toMatchObject({ status: 204 });
    expect(await c.post(receiver.url(), {}, '{}')).toMatchObject({ status: 204 });
    expect(receiver.requests.map((r) => r.body)).toEqual(['{"n":0}', '{"n":1}', '{"n":2}', '{}']);
    expect(refusals).toEqual([]);
  });

  it('refuses a URL outside the allowed networks on every attempt, and counts every refusal (a refusal is never remembered as a pass)', async () => {
    const { client: c, refusals } = client();
    for (let i = 0; i < 3; i++) expect(await c.post('http://10.0.0.7/hook', {}, '{}')).toMatchObject({ refusal: 'address' });
    expect(await c.post('http://inside.test/hook', {}, '{}')).toMatchObject({ refusal: 'address' });
    expect(await c.post('ftp://127.0.0.1/hook', {}, '{}')).toMatchObject({ refusal: 'scheme' });
    expect(refusals).toEqual(['address', 'address', 'address', 'address', 'scheme']);
  });

  it('ends an attempt the receiver never answers at the timeout, as a timeout', async () => {
    const receiver = await startReceiver(() => ({ status: 204, delayMs: 10_000 }));
    const { client: c } = client(300);
    expect(await c.post(`http://127.0.0.1:${receiver.port}/hook`, {}, '{}')).toEqual({ error: 'timeout' });
  });

  it("ends an attempt when the caller's signal aborts (not a timeout), and sends nothing for a signal already aborted", async () => {
    const receiver = await startReceiver(() => ({ status: 204, delayMs: 10_000 }));
    const { client: c } = client(5000);
    const url = `http://127.0.0.1:${receiver.port}/hook`;
    const caller = new AbortController();
    const pending = c.post(url, {}, '{"first":true}', caller.signal);
    setTimeout(() => caller.abort(), 100);
    const result = await pending;
    expect(result.status).toBeUndefined();
    expect(result.error).not.toBe('timeout');
    const gone = new AbortController();
    gone.abort();
    const before = receiver.requests.length;
    const skipped = await c.post(url, {}, '{"second":true}', gone.signal);
    expect(skipped.status).toBeUndefined();
    expect(skipped.error).not.toBe('timeout');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.requests.length).toBe(before);
  });
});
