import { z } from 'zod';
import { EMBEDDED_CORS_ORIGINS } from './embedded-origins';

export { EMBEDDED_CORS_ORIGINS };

/**
 * The browser origins Halo trusts: ONE list (`CORS_ORIGINS`) that the gateway's CORS and WebSocket
 * checks and auth's sign-in/refresh/logout check all read, so a web app that may call the API may
 * also sign in, and no other may do either.
 *
 * An entry is an exact origin (`https://app.example.com`, `http://localhost:5173`) or a pattern:
 * `*` as the port (`http://localhost:*`: any port, the default one included) and/or `*.` before the
 * host (`https://*.example.com`: any subdomain at any depth, not the apex). The scheme is always
 * exact, and a bare `*` is refused: the list grants credentials, which "any origin" must never get.
 */
export class OriginList {
  private readonly exact: ReadonlySet<string>;
  private readonly patterns: readonly OriginPattern[];

  private constructor(
    /** The entries as given (normalised), for logs and docs. */
    readonly entries: readonly string[],
    parsed: readonly (string | OriginPattern)[],
  ) {
    this.exact = new Set(parsed.filter((p): p is string => typeof p === 'string'));
    this.patterns = parsed.filter((p): p is OriginPattern => typeof p !== 'string');
  }

  static readonly NONE = new OriginList([], []);

  /** A comma-separated list; throws an Error naming the first entry that is neither an origin nor a pattern. */
  static parse(text: string): OriginList {
    const entries: string[] = [];
    const parsed: (string | OriginPattern)[] = [];
    for (const entry of text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const one = parseEntry(entry);
      if (one === null) {
        throw new Error(`${JSON.stringify(entry)} is not an origin like https://app.example.com or a pattern like http://localhost:*`);
      }
      entries.push(typeof one === 'string' ? one : one.text);
      parsed.push(one);
    }
    return new OriginList(entries, parsed);
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Whether an `Origin` header's value is on the list (`null`, a path, anything malformed: never). */
  allows(origin: string | undefined): boolean {
    if (origin === undefined || this.entries.length === 0) return false;
    if (this.exact.has(origin)) return true;
    const url = bareOrigin(origin);
    if (url === null) return false;
    if (this.exact.has(url.origin)) return true;
    for (const p of this.patterns) if (p.matches(url)) return true;
    return false;
  }
}

/**
 * The list a process uses: the one configured, else the embedded default under
 * `HALO_ENV=development`, else none (production: same-origin only).
 */
export function effectiveOrigins(configured: OriginList | undefined, haloEnv: string): OriginList {
  return configured ?? (haloEnv === 'development' ? OriginList.parse(EMBEDDED_CORS_ORIGINS) : OriginList.NONE);
}

/** A config field for an origin list (`CORS_ORIGINS`); unset: undefined, so the default can follow HALO_ENV. */
export const originListField = () =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      try {
        return OriginList.parse(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });

class OriginPattern {
  constructor(
    readonly text: string,
    private readonly protocol: string,
    /** The host, or for `*.` the suffix after the dot. */
    private readonly host: string,
    private readonly anySubdomain: boolean,
    /** `*`, or the port as URL reports it ('' for the scheme's default). */
    private readonly port: string,
  ) {}

  matches(url: URL): boolean {
    if (url.protocol !== this.protocol) return false;
    if (this.port !== '*' && url.port !== this.port) return false;
    const host = url.hostname;
    return this.anySubdomain ? host.length > this.host.length + 1 && host.endsWith(`.${this.host}`) : host === this.host;
  }
}

const ENTRY = /^(https?):\/\/(\*\.)?([^/:*?#@\s[\]]+|\[[0-9a-f:.]+\])(?::(\*|\d{1,5}))?\/?$/i;

function parseEntry(entry: string): string | OriginPattern | null {
  const m = ENTRY.exec(entry);
  if (!m) return null;
  const [, scheme, star, host, port] = m as unknown as [string, string, string | undefined, string, string | undefined];
  let url: URL;
  try {
    // The wildcard port is checked by the pattern; URL validates (and normalises) the rest.
    url = new URL(`${scheme}://${host}${port && port !== '*' ? `:${port}` : ''}`);
  } catch {
    return null;
  }
  if (!star && port !== '*') return url.origin;
  // `https://*.com` would be every site of a top-level domain: a wildcard needs a dotted suffix.
  if (star && !url.hostname.includes('.')) return null;
  const text = `${url.protocol}//${star ?? ''}${url.host}${port === '*' ? ':*' : ''}`;
  return new OriginPattern(text, url.protocol, url.hostname, star !== undefined, port === '*' ? '*' : url.port);
}

/** An `Origin` value as a URL, or null unless it is exactly scheme://host[:port] over http(s). */
function bareOrigin(text: string): URL | null {
  if (!/^https?:\/\/[^/?#@\s]+$/i.test(text)) return null;
  try {
    return new URL(text);
  } catch {
    return null;
  }
}
