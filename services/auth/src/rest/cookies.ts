import { FLOW_TTL_SECONDS } from '../domain/oauth';

/**
 * Auth's cookies, written and read in one place. Both are HttpOnly: scripts never see a refresh
 * token or an OAuth state. `Secure` is off only in the embedded dev mode over plain http.
 */
interface CookieOptions {
  path: string;
  maxAgeSeconds: number;
  sameSite: 'Strict' | 'Lax';
  secure: boolean;
}

export function setCookie(name: string, value: string, o: CookieOptions): string {
  const attrs = ['HttpOnly', ...(o.secure ? ['Secure'] : []), `SameSite=${o.sameSite}`, `Path=${o.path}`];
  return `${name}=${value}; ${attrs.join('; ')}; Max-Age=${Math.max(0, Math.floor(o.maxAgeSeconds))}`;
}

/** Every value of the cookie `name` in a Cookie header, in order (the most specific path comes first). */
export function cookieValues(header: string | undefined, name: string): string[] {
  const values: string[] = [];
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

/** The first cookie of that name, or undefined when absent or empty. */
export const cookieValue = (header: string | undefined, name: string): string | undefined => cookieValues(header, name)[0] || undefined;

// ── The refresh token: SameSite=Strict, and only auth's own routes (/auth/refresh, /auth/logout) see it ──

export const REFRESH_COOKIE = 'refresh_token';
export const REFRESH_COOKIE_PATH = '/auth';

export const refreshCookie = (token: string, maxAgeSeconds: number, secure: boolean) =>
  setCookie(REFRESH_COOKIE, token, { path: REFRESH_COOKIE_PATH, maxAgeSeconds, sameSite: 'Strict', secure });

/** The same cookie with Max-Age=0: the browser drops it. */
export const clearedRefreshCookie = (secure: boolean) => refreshCookie('', 0, secure);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The refresh token from a `Cookie` header, or null when absent or not shaped like one of ours. */
export function refreshTokenFrom(header: string | undefined): string | null {
  return (
    cookieValues(header, REFRESH_COOKIE)
      .find((v) => UUID.test(v))
      ?.toLowerCase() ?? null
  );
}

// ── The OAuth state: SameSite=Lax, so it rides along on the top-level redirect back from the provider ──

export const OAUTH_STATE_COOKIE = 'oauth_state';
export const OAUTH_COOKIE_PATH = '/auth/oauth';

export const stateCookie = (state: string, secure = true) =>
  setCookie(OAUTH_STATE_COOKIE, state, { path: OAUTH_COOKIE_PATH, maxAgeSeconds: FLOW_TTL_SECONDS, sameSite: 'Lax', secure });

export const clearedStateCookie = (secure = true) =>
  setCookie(OAUTH_STATE_COOKIE, '', { path: OAUTH_COOKIE_PATH, maxAgeSeconds: 0, sameSite: 'Lax', secure });
