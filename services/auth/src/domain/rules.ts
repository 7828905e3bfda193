import { randomBytes } from 'node:crypto';
import { isScope, SCOPES, type Scope } from '@halo/kit/auth';
import { emailAddress, normaliseEmail, parseId as parseKitId, requiredText, userName } from '@halo/kit/domain';
import { badRequest } from '@halo/kit/errors';

export const MIN_PASSWORD_LENGTH = 8;
/** argon2 pre-hashes any length, but nobody types a kilobyte: a cap keeps request cost bounded. */
export const MAX_PASSWORD_LENGTH = 1024;

export function passwordPolicy(password: unknown): string {
  if (typeof password !== 'string' || password === '') throw badRequest('password is required');
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw badRequest(`password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw badRequest(`password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  }
  return password;
}

export interface Registration {
  name: string;
  email: string;
  password: string;
}

/** `POST /auth/register`: the first invalid field wins, in the order name, email, password. */
export function registration(body: unknown): Registration {
  const b = asObject(body);
  // The kit's user rules, so content (which stores the user) could never refuse what auth accepted.
  const name = userName(b.name);
  const email = emailAddress(b.email);
  return { name, email, password: passwordPolicy(b.password) };
}

/**
 * `POST /auth/login`: only presence is checked. The password policy is not applied here: a
 * policy answer would tell a guesser something, and a too-short password simply fails to verify.
 */
export function loginInput(body: unknown): { email: string; password: string } {
  const b = asObject(body);
  const email = typeof b.email === 'string' ? normaliseEmail(b.email) : '';
  if (!email) throw badRequest('email is required');
  if (typeof b.password !== 'string' || b.password === '') throw badRequest('password is required');
  return { email, password: b.password };
}

function asObject(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

// ── Scopes ────────────────────────────────────────────────────────────────────────────────────

// What an API key may be granted is the kit's list, next to the rule that enforces it.
export { SCOPES, type Scope } from '@halo/kit/auth';

/**
 * A non-empty list of known scopes, de-duplicated, in the canonical order above, then the
 * per-client ones (`operations:write:<client>`, which no list holds) sorted.
 */
export function parseScopes(raw: unknown): Scope[] {
  if (raw === undefined || raw === null) throw badRequest('scopes is required');
  if (!Array.isArray(raw) || raw.some((s) => typeof s !== 'string')) {
    throw badRequest('scopes must be an array of strings');
  }
  const unknown = (raw as string[]).find((s) => !isScope(s));
  if (unknown !== undefined) throw badRequest(`unknown scope: ${unknown}`);
  if (raw.length === 0) throw badRequest('scopes is required');
  const listed: readonly string[] = SCOPES;
  const perClient = [...new Set((raw as Scope[]).filter((s) => !listed.includes(s)))].sort();
  return [...SCOPES.filter((s) => (raw as string[]).includes(s)), ...perClient];
}

// ── API keys ──────────────────────────────────────────────────────────────────────────────────

/**
 * `halo_<8-char prefix>_<32 base64url chars>`: the prefix is for people (it is shown in lists,
 * so a key can be recognised without being revealed); the 192 random bits after it are the secret.
 */
export const API_KEY_FORMAT = /^halo_[0-9a-f]{8}_[A-Za-z0-9_-]{32}$/;
/** The part of a key that is stored and shown again: `halo_` + the prefix. */
export const API_KEY_DISPLAY_LENGTH = 'halo_'.length + 8;

export function generateApiKey(): { key: string; prefix: string } {
  const key = `halo_${randomBytes(4).toString('hex')}_${randomBytes(24).toString('base64url')}`;
  return { key, prefix: key.slice(0, API_KEY_DISPLAY_LENGTH) };
}

export const MAX_API_KEY_NAME = 100;

export const isApiKeyFormat = (key: unknown): key is string => typeof key === 'string' && API_KEY_FORMAT.test(key);

export function apiKeyInput(body: unknown): { name: string; scopes: Scope[] } {
  const b = asObject(body);
  return { name: requiredText(b.name, 'name', MAX_API_KEY_NAME), scopes: parseScopes(b.scopes) };
}

/** auth's ids: the kit's id rule (400 `Invalid id`) from 1, as identity columns start (REST: `pathId(AUTH_IDS)`). */
export const AUTH_IDS = { min: 1 } as const;
export const parseId = (raw: unknown): number => parseKitId(raw, AUTH_IDS);
