import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';
import { forbidden, unauthenticated } from '../errors/errors';

/** Claims of a Halo access token (spec: sub, name, role, iat, exp). */
export interface AccessClaims {
  sub: string;
  name: string;
  role: 'user' | 'admin';
  iat: number;
  exp: number;
  /** Space-separated scopes; present only on tokens exchanged for an API key (restricts the caller). */
  scope?: string;
  /** The API key id, on tokens exchanged for an API key. */
  akid?: string;
}

export const MIN_SECRET_BYTES = 32;
/** docs/api/auth.md: verification tolerates at most 30 s of clock skew. */
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
 * The secret as a KeyObject, made once per secret. Handed a string, jsonwebtoken first tries to
 * read it as a PEM key (createPublicKey / createPrivateKey), which throws for an HMAC secret, on
 * every call: that failed attempt was a quarter of the gateway's CPU on authenticated queries.
 * A process knows one or two secrets (rotation); the map is cleared if it ever holds more.
 */
const secretKeys = new Map<string, KeyObject>();
function secretKey(secret: string): KeyObject {
  let key = secretKeys.get(secret);
  if (key === undefined) {
    if (secretKeys.size >= 8) secretKeys.clear();
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    secretKeys.set(secret, key);
  }
  return key;
}

/**
 * Verifies an access token with the algorithm pinned to HS256: `alg: none`, unsigned tokens,
 * other algorithms, bad signatures, expired tokens and malformed claims all throw 401 Invalid token.
 */
export function verifyAccessToken(token: string, secret: string): AccessClaims {
  let payload: unknown;
  try {
    payload = jwt.verify(token, secretKey(secret), { algorithms: ['HS256'], clockTolerance: CLOCK_TOLERANCE_S });
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
    typeof c.exp === 'number' &&
    (c.scope === undefined || typeof c.scope === 'string') &&
    (c.akid === undefined || typeof c.akid === 'string')
  );
}

/** Signs an access token (HS256, `typ: JWT`). Auth issues tokens; tests and tools reuse this. */
export function signAccessToken(
  claims: { sub: string; name: string; role: AccessClaims['role']; scope?: string; akid?: string },
  secret: string,
  ttlSeconds: number,
): string {
  return jwt.sign(claims, secretKey(assertSigningSecret(secret)), { algorithm: 'HS256', expiresIn: ttlSeconds });
}

/** Who is calling, as every service sees it after verification. */
export interface Caller {
  id: number;
  name: string;
  role: AccessClaims['role'];
  /** null: a user's own token, not restricted by scopes; a list: an API key's scopes. */
  scopes: string[] | null;
  apiKeyId: string | null;
}

export function callerFromClaims(c: AccessClaims): Caller {
  const id = Number(c.sub);
  if (!Number.isSafeInteger(id) || id <= 0) throw unauthenticated(INVALID_TOKEN);
  return {
    id,
    name: c.name,
    role: c.role,
    scopes: c.scope === undefined ? null : c.scope.split(' ').filter(Boolean),
    apiKeyId: c.akid ?? null,
  };
}

/**
 * Tokens that verified, by their exact string: the same caller sends the same token on every
 * request until it expires, and every service (the gateway too) checked it again each time —
 * the HMAC, base64 and JSON of jsonwebtoken were the largest single cost of a subgraph's request.
 * A hit still needs the same secret (a rotated secret verifies afresh) and is refused from the
 * second jsonwebtoken would call it expired (`now >= exp + tolerance`, whole seconds); a token
 * that did not verify is never kept. Access tokens are stateless (no revocation list): nothing
 * else could make a verified token invalid before its expiry. Bounded: least recently used out.
 */
const verifiedTokens = new LRUCache<string, { secret: string; caller: Caller; expiresAt: number }>({ max: 10_000 });

/**
 * The caller behind an `Authorization` header: null when there is none (anonymous), a Caller when
 * the token verifies, and 401 `Invalid token` otherwise. With no secret configured every token is
 * invalid: a service without JWT_SECRET accepts anonymous calls only.
 */
export function callerFromHeader(authorization: string | undefined, secret: string | undefined): Caller | null {
  const token = bearerToken(authorization);
  if (token === null) return null;
  if (!secret) throw unauthenticated(INVALID_TOKEN);
  const known = verifiedTokens.get(token);
  if (known !== undefined && known.secret === secret) {
    if (Math.floor(Date.now() / 1000) < known.expiresAt) return copyOf(known.caller);
    verifiedTokens.delete(token);
  }
  const claims = verifyAccessToken(token, secret);
  const caller = callerFromClaims(claims);
  // A token with `nbf` is checked afresh each time (Halo issues none); every other stays valid
  // until its `exp` plus the tolerance, exactly when jsonwebtoken would start refusing it.
  if ((claims as { nbf?: unknown }).nbf === undefined) {
    verifiedTokens.set(token, { secret, caller, expiresAt: claims.exp + CLOCK_TOLERANCE_S });
  }
  return copyOf(caller);
}

/** Each request gets a Caller of its own: what one does to it never reaches the next. */
const copyOf = (c: Caller): Caller => ({ ...c, scopes: c.scopes && [...c.scopes] });

/**
 * When the bearer token in `authorization` expires (ms since epoch, the verification's clock
 * tolerance included), or null without one. It only decodes: call it after `callerFromHeader`
 * accepted the header (long-lived connections end when their token does).
 */
export function tokenExpiresAt(authorization: string | undefined): number | null {
  const token = bearerToken(authorization);
  const payload = token === null ? null : jwt.decode(token);
  const exp = typeof payload === 'object' && payload !== null ? (payload as { exp?: unknown }).exp : undefined;
  return typeof exp === 'number' ? (exp + CLOCK_TOLERANCE_S) * 1000 : null;
}

/** 401 `Token required` for an anonymous caller. */
export function requireCaller(caller: Caller | null): Caller {
  if (!caller) throw unauthenticated(TOKEN_REQUIRED);
  return caller;
}

/** 403 `Forbidden` unless the caller is an admin (and, for an API key, holds `scope` when given). */
export function requireAdmin(caller: Caller | null, scope?: string): Caller {
  const c = requireCaller(caller);
  if (c.role !== 'admin') throw forbidden();
  if (scope) requireScope(c, scope);
  return c;
}

/** 403 `Forbidden` when an API-key caller lacks `scope`; a user's own token is not scope-limited. */
export function requireScope(caller: Caller | null, scope: string): Caller {
  const c = requireCaller(caller);
  if (c.scopes !== null && !c.scopes.includes(scope)) throw forbidden();
  return c;
}
