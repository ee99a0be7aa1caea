/**
 * Naming conventions of DESIGN.md (Conventions, Names): PascalCase types, kebab-case schemas,
 * and the event type ↔ catalogue `schema`/`version` correspondence.
 */

/** Splits on non-alphanumerics and on lower-to-upper boundaries: `placeOrder_v2` → [place, Order, v2]. */
function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}

/** `place-order`, `place_order`, `placeOrder` → `PlaceOrder`. */
export function pascal(text: string): string {
  return words(String(text))
    .map((w) => w[0].toUpperCase() + w.slice(1).toLowerCase())
    .join('');
}

/** `PlaceOrder` → `place-order`. */
export function kebab(text: string): string {
  return words(String(text))
    .map((w) => w.toLowerCase())
    .join('-');
}

/** A command type from its catalogue schema name: `place-order` → `PlaceOrder`. */
export function commandTypeOf(schema: string): string {
  return pascal(schema);
}

/** Event type `OrderPlacedV1` → `{ schema: 'order-placed', version: '1' }`; no `V<n>` suffix → version `1`. */
export function eventSchemaOf(type: string): { schema: string; version: string } {
  const match = /^(.*?)V(\d+)$/.exec(type);
  if (match && match[1]) return { schema: kebab(match[1]), version: match[2] };
  return { schema: kebab(type), version: '1' };
}

/**
 * Terminal event types (DESIGN.md, Conventions): ending in `Failed`, `Rejected`, `Completed` or
 * `Succeeded`, optionally followed by a `V<n>` suffix.
 */
export function isTerminalType(type: string): boolean {
  return /(Failed|Rejected|Completed|Succeeded)(V\d+)?$/.test(type);
}

/**
 * The event types a legacy command produces: its configured success type, if any, then its failure
 * type (configured, or `<Type>FailedV1`).
 */
export function legacyCommandProduces(command: { type: string; events: { success?: { type: string }; failure?: { type: string } } }): string[] {
  const failure = command.events.failure?.type ?? `${command.type}FailedV1`;
  const success = command.events.success?.type;
  return success ? [success, failure] : [failure];
}
