/**
 * Who sent an operation, as the registry records it (docs/registry.md, "Gateway"): the client's
 * name and version from the request's headers. Both are the client's word, unverified, so both
 * are bounded before they reach the recorder, and nothing a client sends there is ever an error.
 */

/** The headers that name a client; a WebSocket may send them in its `connection_init` payload instead. */
export const CLIENT_HEADERS = ['apollographql-client-name', 'x-client-name', 'apollographql-client-version', 'x-client-version'] as const;

/** What a client said of itself: the values of the CLIENT_HEADERS it sent (as sent, unsanitized). */
export type ClientHeaders = { readonly [K in (typeof CLIENT_HEADERS)[number]]?: string | undefined };

/** The client an operation is counted for: `version` is '' when unknown. */
export interface UsageClient {
  readonly name: string;
  readonly version: string;
}

/** The CLIENT_HEADERS as `read` gives them: only string values are kept. */
export function clientHeadersOf(read: (name: string) => unknown): ClientHeaders {
  const out: { -readonly [K in keyof ClientHeaders]: ClientHeaders[K] } = {};
  for (const name of CLIENT_HEADERS) {
    const value = read(name);
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

const CLIENT_NAME_MAX = 64;
const NOT_CLIENT_NAME = /[^A-Za-z0-9._/@-]+/g;
export const UNKNOWN_CLIENT = 'unknown';

/**
 * The client's name as the registry stores it: `apollographql-client-name`, else `x-client-name`,
 * else `unknown`; only `[A-Za-z0-9._/@-]` (other characters are removed), at most 64 characters.
 */
export function clientNameOf(apolloName: string | undefined, haloName: string | undefined): string {
  const raw = apolloName || haloName;
  if (!raw) return UNKNOWN_CLIENT;
  const clean = raw.replace(NOT_CLIENT_NAME, '').slice(0, CLIENT_NAME_MAX);
  return clean === '' ? UNKNOWN_CLIENT : clean;
}

const CLIENT_VERSION_MAX = 64;
const CLIENT_VERSION = /^[A-Za-z0-9._+-]+$/;

/**
 * The client's version as the registry stores it: `apollographql-client-version`, else
 * `x-client-version`, at most 64 characters of `[A-Za-z0-9._+-]` (semver, build metadata
 * included). Unlike a name, a version is never cut or cleaned (`2.3.1` cut from a longer one is
 * another version): one too long or with any other character is dropped whole. '' when unknown.
 */
export function clientVersionOf(apolloVersion: string | undefined, haloVersion: string | undefined): string {
  const raw = (apolloVersion || haloVersion)?.trim();
  if (!raw || raw.length > CLIENT_VERSION_MAX || !CLIENT_VERSION.test(raw)) return '';
  return raw;
}

/** How many distinct (name, version) spellings `clientCache` remembers before it starts over. */
const CACHE_MAX = 1_000;

/**
 * The UsageClient of a request's headers, remembered by the headers' values as sent: clients send
 * the same few again and again, so a request costs two Map lookups, not a sanitization.
 */
export function clientCache(): (apolloName?: string, haloName?: string, apolloVersion?: string, haloVersion?: string) => UsageClient {
  const known = new Map<string, Map<string, UsageClient>>();
  let size = 0;
  return (apolloName, haloName, apolloVersion, haloVersion) => {
    const nameKey = apolloName || haloName || '';
    const versionKey = apolloVersion || haloVersion || '';
    let byVersion = known.get(nameKey);
    let client = byVersion?.get(versionKey);
    if (client === undefined) {
      client = { name: clientNameOf(apolloName, haloName), version: clientVersionOf(apolloVersion, haloVersion) };
      if (size >= CACHE_MAX) {
        known.clear();
        size = 0;
        byVersion = undefined;
      }
      if (byVersion === undefined) known.set(nameKey, (byVersion = new Map<string, UsageClient>()));
      byVersion.set(versionKey, client);
      size++;
    }
    return client;
  };
}
