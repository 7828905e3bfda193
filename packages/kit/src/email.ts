/** Emails are compared trimmed and lower-cased everywhere; content stores them that way. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The address format every service accepts (one `@`, a dot in the domain, no spaces, ≤ 254 chars). */
export const isEmailAddress = (email: string) => email.length <= 254 && EMAIL.test(email);
