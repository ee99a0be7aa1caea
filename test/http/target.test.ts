import { describe, expect, it } from 'vitest';
import { requestTarget } from '../../src/http/target.ts';

const parsed = (target: string) => {
  const url = URL.parse(target, 'http://gateway.invalid');
  return url ? { pathname: url.pathname, query: url.searchParams.toString() } : null;
};
const viaTarget = (target: string) => {
  const url = requestTarget(target);
  return url ? { pathname: url.pathname, query: url.searchParams.toString() } : null;
};

describe('requestTarget', () => {
  it('gives what URL.parse gives for targets the parser changes or reads specially', () => {
    for (const target of ['//commands', '//evil.example/commands', '/a/../commands', '/./commands', '/%2e%2e/x', '/a\\b', '/comm ands',
      '/commands?x=1&api_key=k', '/commands#frag', '/a/%41', '/é', '/a\tb', '/a//b', '/commands/', 'http://[::1', 'http://h/x?y', '*', '']) {
      expect(viaTarget(target), target).toEqual(parsed(target));
    }
  });

  it('agrees with URL.parse on 20,000 random targets built from path characters and the ones it treats specially', () => {
    const alphabet = ['/', '/', 'a', 'Z', '0', '-', '_', '~', '.', '%', '2', 'e', '?', '#', '\\', ' ', '\t', '=', '&', ':', '@', 'é', '[', ']'];
    let seed = 29;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 20_000; i++) {
      let target = random(8) === 0 ? '' : '/';
      for (let n = random(12); n > 0; n--) target += alphabet[random(alphabet.length)];
      expect(viaTarget(target), JSON.stringify(target)).toEqual(parsed(target));
    }
  });

  it('takes a plain path as it is, with an empty query of its own per request', () => {
    const first = requestTarget('/commands')!;
    expect(first.pathname).toBe('/commands');
    first.searchParams.set('x', '1');
    expect(requestTarget('/commands')!.searchParams.toString()).toBe('');
  });
});
