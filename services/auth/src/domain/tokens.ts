import { createHash } from 'node:crypto';
import { HaloError } from '@halo/kit/errors';

/** Refresh tokens and API keys are stored only as this digest; a database leak reveals neither. */
export const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

export const INVALID_REFRESH_TOKEN = 'Invalid refresh token';
export const INVALID_CREDENTIALS = 'Email atau password salah';
export const INVALID_API_KEY = 'Invalid API key';
export const TOO_MANY_ATTEMPTS = 'Too many attempts';

// ── Refresh-token rotation ────────────────────────────────────────────────────────────────────

export interface StoredRefreshToken {
  familyId: string;
  userId: number;
  expiresAt: Date;
  rotatedAt: Date | null;
  revokedAt: Date | null;
}

/** What the rotation of one token did, atomically (see AuthStore.rotateRefreshToken). */
export type RotateResult = { kind: 'rotated'; userId: number; expiresAt: Date } | { kind: 'reuse'; familyId: string } | { kind: 'invalid' };

/**
 * What presenting a stored refresh token means. `reuse`: the token was already exchanged once, so
 * two parties hold the family (one of them stole it) — the whole family must be revoked.
 */
export function refreshDecision(row: StoredRefreshToken | null, now: Date): 'rotate' | 'reuse' | 'invalid' {
  if (!row || row.revokedAt) return 'invalid';
  if (row.rotatedAt) return 'reuse';
  if (row.expiresAt.getTime() <= now.getTime()) return 'invalid';
  return 'rotate';
}

// ── Cross-site requests on cookie routes ──────────────────────────────────────────────────────

/**
 * Refresh and logout act on a cookie the browser attaches by itself, so a request another site
 * makes the browser send must be refused: `Sec-Fetch-Site: cross-site`, or an `Origin` that is
 * neither this service's own (as the client addressed it) nor allowed. No Origin (curl, servers,
 * same-origin navigations in older browsers) is fine: SameSite=Strict already covers browsers.
 */
export function isCrossSite(req: {
  secFetchSite: string | undefined;
  origin: string | undefined;
  ownOrigin: string;
  allowedOrigins: { allows(origin: string): boolean };
}): boolean {
  if (req.secFetchSite?.toLowerCase() === 'cross-site') return true;
  if (req.origin === undefined) return false;
  const origin = req.origin.trim().toLowerCase();
  return origin !== req.ownOrigin.toLowerCase() && !req.allowedOrigins.allows(origin);
}

/** Seconds for `Retry-After`: at least 1, rounded up. */
export const retryAfterSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** 429 `Too many attempts`; the REST adapter turns `retryAfterSeconds` into a `Retry-After` header. */
export class TooManyAttempts extends HaloError {
  constructor(readonly retryAfterSeconds: number) {
    super('TOO_MANY_REQUESTS', TOO_MANY_ATTEMPTS);
  }
}
