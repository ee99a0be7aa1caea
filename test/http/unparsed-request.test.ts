/**
 * A request Node cannot parse never reaches a route, but is still answered with the protocol's
 * error body: a request head over the limit (found by the fuzz suite: a long URL with an 8 kB
 * `traceparent`) is 431 HEADERS_TOO_LARGE, a request that is not HTTP is 400 INVALID_PARAMETER.
 * Both on a raw socket, since a well-behaved client refuses to send either.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

/** Writes `raw` on a fresh connection and reads until the gateway closes it. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(raw));
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

function parse(answer: string): { status: number; type: string | undefined; body: any } {
  const [head, body] = answer.split('\r\n\r\n');
  const status = Number(head!.split(' ')[1]);
  const type = /content-type: ([^\r\n]+)/i.exec(head!)?.[1];
  return { status, type, body: JSON.parse(body!) };
}

describe('requests Node cannot parse', () => {
  it('answers a request head over the limit 431 HEADERS_TOO_LARGE with the error body', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const port = Number(new URL(gw.url).port);
    const answer = parse(await exchange(port, `GET /events?x=${'a'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\ntraceparent: ${'x'.repeat(8_000)}\r\n\r\n`));
    expect(answer).toMatchObject({ status: 431, type: 'application/json', body: { error: { code: 'HEADERS_TOO_LARGE' } } });
  });

  it('answers a request that is not HTTP 400 INVALID_PARAMETER with the error body, and keeps serving', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const port = Number(new URL(gw.url).port);
    const answer = parse(await exchange(port, 'HELLO THERE\r\n\r\n'));
    expect(answer).toMatchObject({ status: 400, type: 'application/json', body: { error: { code: 'INVALID_PARAMETER' } } });
    expect((await fetch(`${gw.url}healthz`)).status).toBe(200);
  });
});
