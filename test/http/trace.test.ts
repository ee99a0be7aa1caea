import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { newTraceparent, traceparentOf } from '../../src/http/trace.ts';

const VALID = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;

describe('trace context', () => {
  it('starts a new, well-formed and distinct traceparent for every request, across many draws of randomness', () => {
    const made = Array.from({ length: 1_000 }, () => newTraceparent());
    for (const traceparent of made) expect(traceparent).toMatch(VALID);
    expect(new Set(made).size).toBe(made.length);
    // Trace ids and parent ids are distinct too (no slice of randomness is used twice).
    expect(new Set(made.map((t) => t.slice(3, 35))).size).toBe(made.length);
    expect(new Set(made.map((t) => t.slice(36, 52))).size).toBe(made.length);
  });

  it("forwards the caller's valid traceparent and replaces an invalid one", () => {
    const given = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(traceparentOf({ headers: { traceparent: given } } as unknown as IncomingMessage)).toBe(given);
    const replaced = traceparentOf({ headers: { traceparent: '00-x' } } as unknown as IncomingMessage);
    expect(replaced).toMatch(VALID);
    expect(replaced).not.toBe('00-x');
  });
});
