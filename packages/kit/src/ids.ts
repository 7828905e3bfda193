import { badRequest } from './errors';

const ID = /^\d{1,15}$/;

/**
 * CONTRACT.md: ids are integers in REST and ID strings in GraphQL (int64 over gRPC); anything else —
 * letters, signs, decimals, exponents, more than 15 digits — is 400 `Invalid id`, never a 500.
 */
export function parseId(raw: unknown): number {
  const s = typeof raw === 'number' ? String(raw) : raw;
  if (typeof s !== 'string' || !ID.test(s)) throw badRequest('Invalid id');
  return Number(s);
}
