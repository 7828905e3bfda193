/**
 * Where the refresh cookie lives outside a browser. A browser keeps Halo's httpOnly
 * `refresh_token` cookie itself (the SDK sends `/auth/*` requests with `credentials: 'include'`)
 * and hides `Set-Cookie` from scripts; Node's fetch keeps no cookies at all, so the SDK stores
 * them here and sends them back.
 *
 * A small subset of RFC 6265, enough for a client that talks to one API: host-only and Domain
 * cookies, Path matching (the refresh cookie has `Path=/auth`, so it only travels to /auth/*),
 * Max-Age/Expires, and Secure. Like browsers, a Secure cookie is sent over https and to loopback
 * hosts (localhost, 127.0.0.1, [::1]), which browsers treat as secure origins; that is how the
 * Secure refresh cookie of a local Halo over plain http keeps working.
 */
export interface CookieJar {
  /** Stores the cookies of an answer to `url` (each string one `Set-Cookie` header). */
  store(url: string, setCookieHeaders: readonly string[]): void;
  /** The `Cookie` header for a request to `url`, or null when nothing matches. */
  header(url: string): string | null;
  /** Forgets every cookie. */
  clear(): void;
}

interface StoredCookie {
  name: string;
  value: string;
  domain: string;
  hostOnly: boolean;
  path: string;
  secure: boolean;
  /** Epoch ms; null: a session cookie (kept as long as the jar). */
  expiresAt: number | null;
  createdAt: number;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export class MemoryCookieJar implements CookieJar {
  private readonly cookies = new Map<string, StoredCookie>();

  constructor(private readonly now: () => number = Date.now) {}

  store(url: string, setCookieHeaders: readonly string[]): void {
    const u = new URL(url);
    for (const header of setCookieHeaders) {
      const cookie = this.parse(header, u);
      if (!cookie) continue;
      const key = `${cookie.domain};${cookie.path};${cookie.name}`;
      if (cookie.expiresAt !== null && cookie.expiresAt <= this.now()) this.cookies.delete(key);
      else this.cookies.set(key, { ...cookie, createdAt: this.cookies.get(key)?.createdAt ?? this.now() });
    }
  }

  header(url: string): string | null {
    const u = new URL(url);
    const host = u.hostname.toLowerCase();
    const secureChannel = u.protocol === 'https:' || u.protocol === 'wss:' || LOOPBACK.has(host);
    const now = this.now();
    const matching: StoredCookie[] = [];
    for (const [key, c] of this.cookies) {
      if (c.expiresAt !== null && c.expiresAt <= now) {
        this.cookies.delete(key);
        continue;
      }
      if (c.hostOnly ? host !== c.domain : !domainMatches(host, c.domain)) continue;
      if (!pathMatches(u.pathname || '/', c.path)) continue;
      if (c.secure && !secureChannel) continue;
      matching.push(c);
    }
    if (matching.length === 0) return null;
    // RFC 6265 §5.4: longer paths first, then older cookies first.
    matching.sort((a, b) => b.path.length - a.path.length || a.createdAt - b.createdAt);
    return matching.map((c) => `${c.name}=${c.value}`).join('; ');
  }

  clear(): void {
    this.cookies.clear();
  }

  private parse(header: string, url: URL): Omit<StoredCookie, 'createdAt'> | null {
    const [pair = '', ...attrs] = header.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) return null;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (!name) return null;
    const host = url.hostname.toLowerCase();
    let domain = host;
    let hostOnly = true;
    let path: string | null = null;
    let secure = false;
    let maxAge: number | null = null;
    let expires: number | null = null;
    for (const attr of attrs) {
      const i = attr.indexOf('=');
      const key = (i < 0 ? attr : attr.slice(0, i)).trim().toLowerCase();
      const val = i < 0 ? '' : attr.slice(i + 1).trim();
      if (key === 'max-age' && /^-?\d+$/.test(val)) maxAge = Number(val);
      else if (key === 'expires') {
        const t = Date.parse(val);
        if (!Number.isNaN(t)) expires = t;
      } else if (key === 'domain' && val) {
        const d = val.replace(/^\./, '').toLowerCase();
        // A cookie for a domain the answering host is not in is refused (RFC 6265 §5.3 step 6).
        if (!domainMatches(host, d)) return null;
        domain = d;
        hostOnly = false;
      } else if (key === 'path') path = val.startsWith('/') ? val : null;
      else if (key === 'secure') secure = true;
    }
    const expiresAt = maxAge !== null ? this.now() + maxAge * 1000 : expires;
    return { name, value, domain, hostOnly, path: path ?? defaultPath(url.pathname), secure, expiresAt };
  }
}

/** RFC 6265 §5.1.3. */
function domainMatches(host: string, domain: string): boolean {
  return host === domain || (host.endsWith(`.${domain}`) && !/^[\d.]+$/.test(host));
}

/** RFC 6265 §5.1.4. */
function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/';
}

/** RFC 6265 §5.1.4: the directory of the request path. */
function defaultPath(requestPath: string): string {
  if (!requestPath.startsWith('/')) return '/';
  const last = requestPath.lastIndexOf('/');
  return last <= 0 ? '/' : requestPath.slice(0, last);
}

/** Every `Set-Cookie` of an answer: `getSetCookie()` where the runtime has it (Node ≥ 19.7, modern browsers, where it is empty). */
export function setCookiesOf(headers: Headers): string[] {
  const h = headers as Headers & { getSetCookie?: () => string[] };
  if (typeof h.getSetCookie === 'function') return h.getSetCookie();
  const joined = headers.get('set-cookie');
  // Older runtimes join them with ", "; a comma followed by a cookie-name= starts the next one.
  return joined ? joined.split(/,(?=\s*[^;,=\s]+=)/).map((c) => c.trim()) : [];
}
