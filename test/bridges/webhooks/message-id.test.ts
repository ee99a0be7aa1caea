import { describe, expect, it } from 'vitest';
import { v5 as uuidv5 } from 'uuid';
import { messageId, WEBHOOK_MESSAGE_NAMESPACE } from '../../../src/bridges/webhooks/fan-out.ts';

describe('webhook message id', () => {
  it('is the UUIDv5 of subscription and event in the message namespace, as queued ids and receivers already hold them', () => {
    // Ids made before the id moved to node:crypto (issue 28): queued deliveries and receivers' de-duplication depend on them.
    expect(messageId('sub_01HZX', 'evt-1')).toBe('msg_b58ada52-a69e-5009-9b5f-653c1d3f4153');
    expect(messageId('5c1f0e8e-2b1a-4f4e-9a4e-2d8c7a1b3f60', 'ordré-42')).toBe('msg_1a2ee396-8724-5fea-a850-c8017f865197');
    for (let n = 0; n < 200; n++) {
      const subscription = `sub-${n % 7}-${'x'.repeat(n % 40)}`;
      const event = `évt-${n}-${n * 7919}`;
      expect(messageId(subscription, event)).toBe(`msg_${uuidv5(`${subscription}\n${event}`, WEBHOOK_MESSAGE_NAMESPACE)}`);
    }
  });
});
