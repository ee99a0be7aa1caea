import { describe, expect, it } from 'vitest';
import { SseLimitError, SseParser } from '../../src/ingest/sse-parser.ts';

function parseAll(chunks: (string | Uint8Array)[], parser = new SseParser()) {
  return [...chunks.flatMap((chunk) => parser.push(chunk)), ...parser.end()];
}

describe('SseParser', () => {
  it('joins multi-line data and keeps id and event', () => {
    const messages = parseAll(['id: 7\nevent: update\ndata: {"a":\ndata: 1}\n\n']);
    expect(messages).toEqual([{ event: 'update', data: '{"a":\n1}', lastEventId: '7' }]);
  });

  it('treats CRLF, LF and CR alike, even when CRLF is split across chunks', () => {
    const messages = parseAll(['data: a\r', '\n\r', '\ndata: b\r\rdata: c\n\n']);
    expect(messages.map((m) => m.data)).toEqual(['a', 'b', 'c']);
  });

  it('ignores comments and unknown fields, strips one space only', () => {
    const messages = parseAll([': keepalive\n\nfoo: bar\ndata:  two spaces\ndata\n\n']);
    expect(messages).toEqual([{ event: 'message', data: ' two spaces\n', lastEventId: '' }]);
  });

  it('keeps the last event id across events and ignores ids with NULL', () => {
    const messages = parseAll(['id: 1\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n']);
    expect(messages.map((m) => m.lastEventId)).toEqual(['1', '1', '1', '']);
  });

  it('decodes UTF-8 split inside a character and drops one leading BOM', () => {
    const bytes = new TextEncoder().encode('\uFEFFdata: café €\n\n');
    const messages = parseAll([bytes.slice(0, 3), bytes.slice(3, 13), bytes.slice(13)]);
    expect(messages).toEqual([{ event: 'message', data: 'café €', lastEventId: '' }]);
  });

  it('feeds one byte at a time', () => {
    const bytes = new TextEncoder().encode('id: 9\r\ndata: {"x":1}\r\n\r\n');
    const messages = parseAll([...bytes].map((b) => Uint8Array.of(b)));
    expect(messages).toEqual([{ event: 'message', data: '{"x":1}', lastEventId: '9' }]);
  });

  it('does not dispatch an event without data, nor an unterminated one at the end', () => {
    expect(parseAll(['event: ping\n\ndata: half'])).toEqual([]);
  });

  it('reads retry when it is all digits', () => {
    const parser = new SseParser();
    parseAll(['retry: 1500\nretry: 1s\n\n'], parser);
    expect(parser.retryMs).toBe(1500);
  });

  it('throws SseLimitError on an over-long line, even one split across chunks', () => {
    const parser = new SseParser({ maxLength: 16 });
    expect(() => parser.push('data: 0123456789')).not.toThrow();
    expect(() => parser.push('abcdef')).toThrow(SseLimitError);
  });

  it('throws SseLimitError when one event accumulates too much data', () => {
    const parser = new SseParser({ maxLength: 16 });
    expect(() => parser.push('data: 12345678\ndata: 12345678\n')).toThrow(SseLimitError);
  });
});

describe('SseParser with oversized: skip', () => {
  it('dispatches an event whose data or line is beyond the bound without its data, marked oversized, and parses the next one whole', () => {
    const parser = new SseParser({ maxLength: 8, oversized: 'skip' });
    const first = parser.push('id: 1\ndata: 12345678\ndata: 12345678\n\nid: 2\ndata: ok\n\n');
    expect(first).toEqual([
      { event: 'message', data: '', lastEventId: '1', oversized: true },
      { event: 'message', data: 'ok', lastEventId: '2' },
    ]);
    // One over-long line split across chunks: its rest is dropped up to its end.
    expect(parser.push('id: 3\ndata: abcd')).toEqual([]);
    expect(parser.push('efghijklmnop')).toEqual([]);
    expect(parser.push('qrstuvw\n\nid: 4\ndata: a\ndata: b\n\n')).toEqual([
      { event: 'message', data: '', lastEventId: '3', oversized: true },
      { event: 'message', data: 'a\nb', lastEventId: '4' },
    ]);
  });
});
