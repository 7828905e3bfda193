import { badRequest } from '../errors/errors';

/**
 * A required text field, trimmed: 400 `<field> is required` (missing, not a string, or blank) or
 * `<field> must be at most <max> characters`. Every service words these answers the same way.
 */
export function requiredText(raw: unknown, field: string, max: number): string {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (!text) throw badRequest(`${field} is required`);
  if (text.length > max) throw badRequest(`${field} must be at most ${max} characters`);
  return text;
}
