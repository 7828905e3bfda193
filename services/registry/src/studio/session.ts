import type { IncomingMessage } from 'node:http';
import { callerFromHeader, requireAdmin } from '@halo/kit/auth';
import { isHaloError } from '@halo/kit/errors';
import type { Principal } from '../domain/model';

/**
 * Who is looking at the Studio. A browser cannot send `x-api-key` on a link it follows, so the
 * sign-in page exchanges an admin's API key (with `schema:read` or `schema:write`) through auth,
 * exactly as the API does, and keeps the access token auth gave back in an httpOnly, SameSite=
 * Strict cookie scoped to `/studio`: it is verified on every page like a Bearer token, and ends
 * when the token does (auth's access-token lifetime). Development, from loopback: no sign-in
 * (the registry's own rule for reads, docs/registry.md "Authentication").
 */
export const SESSION_COOKIE = 'halo_studio';

/** The Studio's scopes: either lets a key read (a write scope implies reading). */
const READ_SCOPES = (scope: string) => scope === 'schema:read' || scope === 'schema:write' || scope.startsWith('schema:write:');

export function sessionToken(req: IncomingMessage): string | undefined {
  const cookies = req.headers.cookie;
  if (typeof cookies !== 'string') return undefined;
  for (const part of cookies.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** The principal a session cookie stands for, or null when it is absent, expired or not an admin's with a schema scope. */
export function sessionPrincipal(token: string, jwtSecret: string | undefined): (Principal & { expiresAt: number }) | null {
  try {
    const caller = requireAdmin(callerFromHeader(`Bearer ${token}`, jwtSecret));
    if (caller.scopes !== null && !caller.scopes.some(READ_SCOPES)) return null;
    const exp = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: number };
    return { kind: 'admin', id: String(caller.id), name: caller.name, services: [], clients: [], expiresAt: (exp.exp ?? 0) * 1000 };
  } catch (err) {
    if (isHaloError(err)) return null;
    throw err;
  }
}

/** The Set-Cookie value: Secure when the request came over TLS (directly or per the proxy in front). */
export function sessionCookie(token: string, req: IncomingMessage, maxAgeS: number): string {
  const tls = (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https';
  return `${SESSION_COOKIE}=${encodeURIComponent(token)}; Path=/studio; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeS))}${tls ? '; Secure' : ''}`;
}

export const clearedSessionCookie = `${SESSION_COOKIE}=; Path=/studio; HttpOnly; SameSite=Strict; Max-Age=0`;
