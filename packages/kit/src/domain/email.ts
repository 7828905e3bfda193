import { badRequest } from '../errors/errors';

/** Emails are compared trimmed and lower-cased everywhere; content stores them that way. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The address format every service accepts (one `@`, a dot in the domain, no spaces, ≤ 254 chars). */
export const isEmailAddress = (email: string) => email.length <= 254 && EMAIL.test(email);

/** A required email field, normalised: 400 `email is required` or `email is invalid`. */
export function emailAddress(raw: unknown): string {
  const email = typeof raw === 'string' ? normaliseEmail(raw) : '';
  if (!email) throw badRequest('email is required');
  if (!isEmailAddress(email)) throw badRequest('email is invalid');
  return email;
}
