import jwt from 'jsonwebtoken';
import { unauthenticated } from './errors';

/** Claims of a Halo access token (spec: sub, name, role, iat, exp). */
export interface AccessClaims {
  sub: string;
  name: string;
  role: 'user' | 'admin';
  iat: number;
  exp: number;
}

export const MIN_SECRET_BYTES = 32;
/** CONTRACT.md: verification tolerates at most 30 s of clock skew. */
export const CLOCK_TOLERANCE_S = 30;

export const TOKEN_REQUIRED = 'Token required';
export const INVALID_TOKEN = 'Invalid token';

/** Refuses a signing secret shorter than 256 bits, with a message that says why. */
export function assertSigningSecret(secret: string | undefined, variable = 'JWT_SECRET'): string {
  if (!secret || Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES) {
    throw new Error(`${variable} must be at least ${MIN_SECRET_BYTES} bytes of random data`);
  }
  return secret;
}

/** The token from `Authorization: Bearer <token>`, or null when the header is missing or empty. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(.*)$/i.exec(header.trim());
  const token = m ? m[1]!.trim() : header.trim();
  return token === '' || /^Bearer$/i.test(token) ? null : token;
}

/**
 * Verifies an access token with the algorithm pinned to HS256: `alg: none`, unsigned tokens,
 * other algorithms, bad signatures, expired tokens and malformed claims all throw 401 Invalid token.
 */
export function verifyAccessToken(token: string, secret: string): AccessClaims {
  let payload: unknown;
  try {
    payload = jwt.verify(token, secret, { algorithms: ['HS256'], clockTolerance: CLOCK_TOLERANCE_S });
  } catch {
    throw unauthenticated(INVALID_TOKEN);
  }
  if (!isAccessClaims(payload)) throw unauthenticated(INVALID_TOKEN);
  return payload;
}

function isAccessClaims(p: unknown): p is AccessClaims {
  if (typeof p !== 'object' || p === null) return false;
  const c = p as Record<string, unknown>;
  return (
    typeof c.sub === 'string' &&
    typeof c.name === 'string' &&
    (c.role === 'user' || c.role === 'admin') &&
    typeof c.iat === 'number' &&
    typeof c.exp === 'number'
  );
}

/** Signs an access token (HS256, `typ: JWT`). Auth issues tokens; tests and tools reuse this. */
export function signAccessToken(
  claims: { sub: string; name: string; role: AccessClaims['role'] },
  secret: string,
  ttlSeconds: number,
): string {
  return jwt.sign(claims, assertSigningSecret(secret), { algorithm: 'HS256', expiresIn: ttlSeconds });
}
