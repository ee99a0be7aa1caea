import { describe, expect, it } from 'vitest';
import { CircuitBreaker, type CircuitState } from '../../src/backends/circuit-breaker.ts';

function breaker() {
  let now = 1_000_000;
  const changes: CircuitState[] = [];
  const circuit = new CircuitBreaker({ failures: 3, cooldownMs: 30_000, now: () => now, onChange: (s) => changes.push(s) });
  return { circuit, changes, advance: (ms: number) => (now += ms) };
}

const refusal = (fn: () => void) => {
  try {
    fn();
  } catch (err) {
    return err as { code: string; headers?: Record<string, string> };
  }
  return undefined;
};

describe('circuit breaker', () => {
  it('opens after the configured number of consecutive failures, not before', () => {
    const { circuit, changes } = breaker();
    for (let i = 0; i < 2; i++) {
      circuit.admit();
      circuit.failed();
    }
    expect(circuit.state).toBe('closed');
    circuit.admit();
    circuit.succeeded();
    for (let i = 0; i < 2; i++) {
      circuit.admit();
      circuit.failed();
    }
    expect(circuit.state).toBe('closed');
    circuit.admit();
    circuit.failed();
    expect(circuit.state).toBe('open');
    expect(changes).toEqual(['open']);
  });

  it('refuses calls while open with 503 and Retry-After', () => {
    const { circuit, advance } = breaker();
    for (let i = 0; i < 3; i++) {
      circuit.admit();
      circuit.failed();
    }
    advance(10_000);
    const err = refusal(() => circuit.admit());
    expect(err?.code).toBe('BACKEND_UNAVAILABLE');
    expect(err?.headers?.['Retry-After']).toBe('20');
  });

  it('lets one probe through after the cooldown: success closes, failure re-opens', () => {
    const { circuit, changes, advance } = breaker();
    for (let i = 0; i < 3; i++) {
      circuit.admit();
      circuit.failed();
    }
    advance(30_000);
    expect(circuit.state).toBe('half-open');
    circuit.admit();
    expect(refusal(() => circuit.admit())?.code).toBe('BACKEND_UNAVAILABLE');
    circuit.failed();
    expect(circuit.state).toBe('open');
    advance(30_000);
    circuit.admit();
    circuit.succeeded();
    expect(circuit.state).toBe('closed');
    expect(changes).toEqual(['open', 'half-open', 'open', 'half-open', 'closed']);
  });
});
