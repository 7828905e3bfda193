import type { IncomingMessage } from 'node:http';
import { toHttpDate, versionMediaType } from '@halo/kit/rest';
import { createRouteTable, versionsOf, type RouteDef, type RouteMatch, type RouteTable } from './routes';

/**
 * REST API versioning at the edge (docs/api/conventions.md "Versioning"), driven by the composed
 * route table (gateway/routes.json), i.e. by what each service declares in its own manifest:
 *
 * - Unversioned paths are the default version (1); `/api/v<N>/<path>` is version N of `<path>`.
 * - On an unversioned path, `?version=<N>` or `Accept: application/vnd.halo.v<N>+json` picks N.
 * - A selector naming a version no route exists in, or malformed (`v0`, `v2x`, `abc`), is
 *   400 `Unsupported API version`; selectors that disagree are 400 `Conflicting API versions`.
 * - A route exists in the versions its RouteDef lists (`versions`, default `[1]`); version N of
 *   it is proxied to `<upstreamPrefix of N><path>` (v2 of `/products/7` → catalog's `/v2/products/7`).
 *   A known version without the route is 404, as for any unknown route.
 * - A route's version can be deprecated (`deprecated[N]`): its responses carry `Deprecation: true`,
 *   `Sunset: <HTTP-date>` and `Link: <guide>; rel="successor-version"`.
 * - `Vary: Accept` on the routes that exist in more than one version, and on every answer whose
 *   version the Accept header chose, so a shared cache never serves one version for another.
 * - A version other than the default negotiated on the unversioned path (`Accept`, `?version=`)
 *   answers as its own media type (`Content-Type: application/vnd.halo.v2+json`), the one the
 *   OpenAPI document describes it under; `/api/vN/…` answers `application/json`, as documented there.
 *
 * The unversioned hot path costs three cheap tests (path prefix, `version=` in the query string,
 * a regex over Accept) and one Map lookup; every header object is built once, when the table is.
 */

/** A version's retirement notice, as the route table carries it. */
export interface Deprecation {
  /** When the deprecated version stops answering: an HTTP-date (IMF-fixdate). */
  sunset: string;
  /** The migration guide: an absolute URL, or a path on the gateway. */
  link: string;
}

export interface VersionConfig {
  /** Where services serve this version of a route: `<upstreamPrefix><path>` (`''`: the path itself). */
  upstreamPrefix: string;
}

export interface VersioningConfig {
  /** The version of a request without any selector. */
  defaultVersion: number;
  versions: Readonly<Record<number, VersionConfig>>;
}

/** The HTTP-date rule lives with the manifests (kit); the gateway only ever reads HTTP-dates. */
export { toHttpDate };

export const UNSUPPORTED_VERSION = 'Unsupported API version';
export const CONFLICTING_VERSIONS = 'Conflicting API versions';

type Headers = Readonly<Record<string, string>>;

export type VersionedMatch = (RouteMatch | { kind: 'unsupported-version'; error: string }) & {
  /** Headers the version adds to the response (deprecation notice, Vary), when there are any. */
  headers?: Headers;
  /** The upstream path and query, when they differ from the request's. */
  url?: string;
  /** The Content-Type of a successful JSON answer, when the version was negotiated on the unversioned path. */
  mediaType?: string;
};

const VARY_ACCEPT: Headers = Object.freeze({ vary: 'Accept' });
/** In `Accept: application/vnd.halo.v2+json` the version token is what follows `.v` up to `+`, `;` or `,`. */
const ACCEPT_SELECTOR = /vnd\.halo\.v/i;
const ACCEPT_VERSIONS = /vnd\.halo\.v([^+;,\s]*)/gi;
const VERSION_TOKEN = /^[1-9]\d{0,5}$/;

const isDigit = (c: number) => c >= 48 && c <= 57;

function deprecationHeaders(d: Deprecation): Headers {
  return { deprecation: 'true', sunset: d.sunset, link: `<${d.link}>; rel="successor-version"` };
}

export function createVersioning(routes: readonly RouteDef[], config: VersioningConfig) {
  const versions = new Map(Object.entries(config.versions).map(([n, v]) => [Number(n), v]));
  checkVersions(routes, versions, config.defaultVersion);
  // Per version: its route table, and the headers of each of its routes (only those that have any).
  const tables = new Map<number, RouteTable>();
  const headers = new Map<number, Map<RouteDef, Headers>>();
  for (const n of versions.keys()) {
    tables.set(n, createRouteTable(routes, n));
    headers.set(n, routeHeaders(routes, n));
  }
  const mediaTypes = new Map([...versions.keys()].map((n) => [n, versionMediaType(n)]));
  const all: Versions = { versions, tables, headers, mediaTypes, defaultVersion: config.defaultVersion };
  const defaultTable = tables.get(config.defaultVersion)!;
  const defaultHeaders = headers.get(config.defaultVersion)!;

  return {
    /** Replaces the plain route-table lookup: the route (and how to forward it) for this request. */
    match(req: IncomingMessage, url: string, q: number, path: string): VersionedMatch {
      const method = req.method ?? 'GET';
      const accept = req.headers.accept;
      const selects =
        (path.startsWith('/api/v') && isDigit(path.charCodeAt(6))) ||
        (q !== -1 && url.includes('version=', q)) ||
        (accept !== undefined && ACCEPT_SELECTOR.test(accept));
      if (selects) return selected(all, method, url, q, path, accept);
      const match: VersionedMatch = defaultTable.match(method, path);
      if (match.kind === 'route') {
        // A route match is a fresh object per lookup: adding to it costs no allocation.
        const h = defaultHeaders.get(match.route);
        if (h) match.headers = h;
      }
      return match;
    },
  };
}

export type Versioning = ReturnType<typeof createVersioning>;

/** A copy with headers: a not-found match is a shared constant and must never be mutated. */
function withHeaders(match: VersionedMatch, headers: Headers | undefined): VersionedMatch {
  return headers ? { ...match, headers } : match;
}

function decodeParam(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/** Every version a route lists, and the default, must be configured. */
function checkVersions(routes: readonly RouteDef[], versions: ReadonlyMap<number, VersionConfig>, defaultVersion: number): void {
  if (!versions.has(defaultVersion)) {
    throw new Error(`API version ${defaultVersion} (the default) is not configured`);
  }
  for (const route of routes) {
    for (const v of versionsOf(route)) {
      if (!versions.has(v)) throw new Error(`${route.method} ${route.path} lists API version ${v}, which is not configured`);
    }
  }
}

/** The headers of each route of version `n` (only those that have any): deprecation, Vary. */
function routeHeaders(routes: readonly RouteDef[], n: number): Map<RouteDef, Headers> {
  const byRoute = new Map<RouteDef, Headers>();
  for (const route of routes) {
    if (!versionsOf(route).includes(n)) continue;
    const notice = route.deprecated?.[n];
    const h: Record<string, string> = {
      ...(notice ? deprecationHeaders(notice) : {}),
      ...(versionsOf(route).length > 1 ? VARY_ACCEPT : {}),
    };
    if (Object.keys(h).length > 0) byRoute.set(route, Object.freeze(h));
  }
  return byRoute;
}

/** Every configured version: its route table and route headers. */
interface Versions {
  versions: ReadonlyMap<number, VersionConfig>;
  tables: ReadonlyMap<number, RouteTable>;
  headers: ReadonlyMap<number, ReadonlyMap<RouteDef, Headers>>;
  /** Each version's media type (`application/vnd.halo.v2+json`), made once. */
  mediaTypes: ReadonlyMap<number, string>;
  defaultVersion: number;
}

/** What a request's version selectors say, and its path and query without them. */
interface Selectors {
  named: number[];
  /** False when a selector is malformed or names a version that is not configured. */
  valid: boolean;
  publicPath: string;
  search: string;
  byAccept: boolean;
}

/** The path prefix (`/api/v2/…`), `?version=` and `Accept: application/vnd.halo.v2+json`. */
function readSelectors(all: Versions, url: string, q: number, path: string, accept: string | undefined): Selectors {
  const s: Selectors = { named: [], valid: true, publicPath: path, search: q === -1 ? '' : url.slice(q), byAccept: false };
  const add = (token: string) => {
    const n = VERSION_TOKEN.test(token) ? Number(token) : null;
    if (n === null || !all.versions.has(n)) s.valid = false;
    else s.named.push(n);
  };
  if (path.startsWith('/api/v') && isDigit(path.charCodeAt(6))) {
    const end = path.indexOf('/', 5);
    add(path.slice(6, end === -1 ? undefined : end));
    s.publicPath = end === -1 ? '/' : path.slice(end);
  }
  if (q !== -1 && url.includes('version=', q)) {
    const kept: string[] = [];
    let found = false;
    for (const part of url.slice(q + 1).split('&')) {
      // The name as written (the cheap test above looks for it literally); the value decoded.
      const eq = part.indexOf('=');
      if (eq !== -1 && part.slice(0, eq) === 'version') {
        found = true;
        add(decodeParam(part.slice(eq + 1)));
      } else if (part) {
        kept.push(part);
      }
    }
    if (found) s.search = kept.length > 0 ? `?${kept.join('&')}` : '';
  }
  s.byAccept = accept !== undefined && ACCEPT_SELECTOR.test(accept);
  if (s.byAccept) for (const m of accept!.matchAll(ACCEPT_VERSIONS)) add(m[1]!);
  return s;
}

/** The slow path: a request that names a version one way or another. */
function selected(all: Versions, method: string, url: string, q: number, path: string, accept: string | undefined): VersionedMatch {
  const { named, valid, publicPath, search, byAccept } = readSelectors(all, url, q, path, accept);
  const vary = byAccept ? VARY_ACCEPT : undefined;
  if (!valid) return withHeaders({ kind: 'unsupported-version', error: UNSUPPORTED_VERSION }, vary);
  if (new Set(named).size > 1) return withHeaders({ kind: 'unsupported-version', error: CONFLICTING_VERSIONS }, vary);
  const version = named[0] ?? all.defaultVersion;

  const match: VersionedMatch = all.tables.get(version)!.match(method, publicPath);
  if (match.kind !== 'route') return withHeaders(match, vary);
  const own = all.headers.get(version)!.get(match.route);
  const h = own && vary && !own.vary ? { ...own, ...vary } : (own ?? vary);
  if (h) match.headers = h;
  // Negotiated on the unversioned path: the answer is labelled as the version's own media type.
  if (version !== all.defaultVersion && publicPath === path) match.mediaType = all.mediaTypes.get(version);
  const upstream = `${all.versions.get(version)!.upstreamPrefix}${publicPath}${search}`;
  if (upstream !== url) match.url = upstream;
  return match;
}
