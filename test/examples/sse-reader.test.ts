import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readSse, sseRecords } from '../support/sse.ts';

/** A body that delivers `chunks` one by one. */
function body(...chunks: string[]): AsyncIterable<Uint8Array> {
  return Readable.from(chunks.map((chunk) => Buffer.from(chunk)));
}

async function all(chunks: string[]) {
  const records = [];
  for await (const record of sseRecords(body(...chunks))) records.push(record);
  return records;
}

describe('test SSE reader', () => {
  it('parses id, event, multi-line data, retry and comments', async () => {
    const records = await all([': hello\n\nid: 7\nevent: tick\ndata: {"a":\ndata: 1}\nretry: 500\n\n']);
    expect(records).toEqual([
      { data: '', comments: ['hello'] },
      { id: '7', event: 'tick', data: '{"a":\n1}', retry: 500, comments: [] },
    ]);
  });

  it('handles CRLF and CR line ends split across chunks, and drops an unterminated block', async () => {
    const records = await all(['data: one\r', '\n\r\ndata: tw', 'o\r\rdata: never dispatched']);
    expect(records.map((record) => record.data)).toEqual(['one', 'two']);
  });

  it('stops at the first record that satisfies until', async () => {
    const records = await readSse(body('data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'), { until: (record) => record.data === '2' });
    expect(records.map((record) => record.data)).toEqual(['1', '2']);
  });

  it('rejects when until is not met in time', async () => {
    const endless = new Readable({ read() {} });
    endless.push('data: 1\n\n');
    await expect(readSse(endless, { until: () => false, timeoutMs: 50 })).rejects.toThrow(/within 50 ms/);
    expect(endless.destroyed).toBe(true);
  });
});
