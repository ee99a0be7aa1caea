/**
 * The per-backend entries of a catalogue (commands, queries), each holding a compiled schema that
 * must be released when no longer used.
 */

/** An entry loaded from one backend, with the release of its compiled schema. */
export interface Releasable {
  release: () => void;
}

/**
 * Installs a backend's new entries in `declared`: compiled schemas no longer used are released, and
 * a backend that is gone (`known` false) with no entries is forgotten.
 */
export function replaceDeclared<L extends Releasable>(declared: Map<string, L[]>, backendId: string, loaded: L[], known: boolean): void {
  const kept = new Set(loaded.map((l) => l.release));
  for (const old of declared.get(backendId) ?? []) if (!kept.has(old.release)) old.release();
  if (loaded.length === 0 && !known) declared.delete(backendId);
  else declared.set(backendId, loaded);
}
