import { badRequest } from '../errors/errors';

const ID = /^\d{1,15}$/;

export const INVALID_ID = 'Invalid id';

/** Ids start at 0 or, for identity columns, at 1 (a 0 is then as invalid as a letter). */
export interface IdRule {
  min?: 0 | 1;
}

/** The id rule as text (a REST path segment, a cursor's tail): 1–15 decimal digits, at least `min`. */
export const isIdText = (s: string, rule: IdRule = {}): boolean => ID.test(s) && Number(s) >= (rule.min ?? 0);

/**
 * The one id rule (docs/api/conventions.md): ids are integers in REST and ID strings in GraphQL
 * (int64 over gRPC); anything else — letters, signs, decimals, exponents, more than 15 digits, or
 * below `min` — is 400 `Invalid id`, never a 500. REST path ids get it from `pathId` in the
 * manifest; GraphQL and gRPC adapters call it; domains receive numbers.
 */
export function parseId(raw: unknown, rule: IdRule = {}): number {
  const s = typeof raw === 'number' ? String(raw) : raw;
  if (typeof s !== 'string' || !isIdText(s, rule)) throw badRequest(INVALID_ID);
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
