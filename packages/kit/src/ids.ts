import { badRequest } from './errors';

const ID = /^\d{1,15}$/;

/**
 * docs/api/conventions.md: ids are integers in REST and ID strings in GraphQL (int64 over gRPC); anything else —
 * letters, signs, decimals, exponents, more than 15 digits — is 400 `Invalid id`, never a 500.
 */
export function parseId(raw: unknown): number {
  const s = typeof raw === 'number' ? String(raw) : raw;
  if (typeof s !== 'string' || !ID.test(s)) throw badRequest('Invalid id');
  return Number(s);
}

/** Rows looked up by id, answered in the order of `ids` with null where none was found (a DataLoader batch's shape). */
export function alignById<T extends { id: number }>(ids: readonly number[], rows: readonly T[]): (T | null)[] {
  const found = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => found.get(id) ?? null);
}

/** Rows grouped under each key, in the order of `keys` (an empty list for a key with none). */
export function groupByKey<T>(keys: readonly number[], rows: readonly T[], keyOf: (row: T) => number): T[][] {
  const groups = new Map<number, T[]>(keys.map((k) => [k, []]));
  for (const row of rows) groups.get(keyOf(row))?.push(row);
  return keys.map((k) => groups.get(k)!);
}
