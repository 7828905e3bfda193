/**
 * Web Crypto only (globalThis.crypto: Node ≥ 19 and every current browser), never `node:crypto`.
 * Browsers expose `randomUUID` and `subtle` only in secure contexts (https, localhost): the UUID
 * then comes from `getRandomValues`, which every context has, and a missing `subtle` turns
 * persisted queries off (the full query is sent) instead of failing.
 */

/** A random UUID v4 (122 random bits; the contract asks ≥ 64 for an Idempotency-Key). */
export function uuidV4(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether `sha256Hex` can run here. */
export const canHash = (): boolean => typeof globalThis.crypto?.subtle?.digest === 'function';

/** Lower-case hex SHA-256 of the UTF-8 text (the APQ hash of a query). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (x) => x.toString(16).padStart(2, '0')).join('');
}
