/**
 * The deepest a JSON request body may nest objects and arrays: 64 levels. No Halo body nests
 * beyond a few dozen (a composed OpenAPI document, the deepest, about twenty), and code that walks
 * a body recursively (a canonical form, a fingerprint, a GraphQL coercion) overflows the stack on
 * thousands: a 500 and a stack trace per request. The gateway holds GraphQL variables and
 * extensions to the same cap (gateway/src/graphql/request-checks.ts).
 */
export const MAX_JSON_DEPTH = 64;

/** The contract's 400 for a body nested past MAX_JSON_DEPTH. */
export const JSON_TOO_DEEP = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * True when `value` nests objects or arrays more than `levels` levels deep (itself being level 1).
 * Allocates nothing, and recurses at most `levels` deep, whatever the value.
 */
export function deeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (deeperThan(value[i], levels - 1)) return true;
    return false;
  }
  for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], levels - 1)) return true;
  return false;
}
