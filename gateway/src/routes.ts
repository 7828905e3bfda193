import FindMyWay from 'find-my-way';
import type { ServiceName } from '@halo/kit';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One public REST route and the service that answers it. The gateway forwards the request
 * unchanged; later options (auth checks, version aliases) are added as optional members here,
 * so a route stays one line of this table.
 */
export interface RouteDef {
  service: ServiceName;
  method: HttpMethod;
  /** find-my-way syntax: `/posts/:id`. */
  path: string;
  /**
   * The gateway refuses the request without a caller (401 `Token required` / `Invalid token` /
   * `Invalid API key`) before it reaches the service; the service checks roles and scopes.
   */
  auth?: true;
  /**
   * The API versions the route exists in (default `[1]`: unversioned, and `/api/v1/…`). The
   * service serves version N of it at that version's upstream prefix + path (src/versioning.ts).
   */
  versions?: readonly number[];
}

/** Every REST route a client can reach through the gateway (CONTRACT.md, ARCHITECTURE.md). */
export const ROUTES: readonly RouteDef[] = [
  { service: 'auth', method: 'POST', path: '/auth/register' },
  { service: 'auth', method: 'POST', path: '/auth/login' },
  { service: 'auth', method: 'POST', path: '/auth/refresh' },
  { service: 'auth', method: 'POST', path: '/auth/logout' },
  { service: 'auth', method: 'GET', path: '/profile', auth: true },
  { service: 'auth', method: 'GET', path: '/auth/api-keys', auth: true },
  { service: 'auth', method: 'POST', path: '/auth/api-keys', auth: true },
  { service: 'auth', method: 'DELETE', path: '/auth/api-keys/:id', auth: true },
  { service: 'auth', method: 'GET', path: '/auth/oauth/:provider/start' },
  { service: 'auth', method: 'GET', path: '/auth/oauth/:provider/callback' },
  { service: 'content', method: 'GET', path: '/hello' },
  { service: 'content', method: 'POST', path: '/greet' },
  { service: 'content', method: 'GET', path: '/users/:userId/posts' },
  { service: 'content', method: 'GET', path: '/posts/:id' },
  { service: 'content', method: 'GET', path: '/posts/:id/comments' },
  { service: 'catalog', method: 'GET', path: '/products', versions: [1, 2] },
  { service: 'catalog', method: 'POST', path: '/products', auth: true, versions: [1, 2] },
  { service: 'catalog', method: 'GET', path: '/products/:id', versions: [1, 2] },
  { service: 'catalog', method: 'PUT', path: '/products/:id', auth: true, versions: [1, 2] },
  { service: 'catalog', method: 'DELETE', path: '/products/:id', auth: true, versions: [1, 2] },
];

/** The versions a route exists in. */
export const versionsOf = (route: RouteDef): readonly number[] => route.versions ?? [1];

export type RouteMatch =
  | { kind: 'route'; route: RouteDef; params: Record<string, string | undefined> }
  | { kind: 'method-not-allowed'; allow: string }
  | { kind: 'not-found' };

/** What a path knows: the route per method and the `Allow` value for a 405. */
interface PathEntry {
  byMethod: Map<string, RouteDef>;
  allow: string;
}

const NOT_FOUND: RouteMatch = { kind: 'not-found' };
const NO_QUERY = Object.freeze({});
const noop = () => undefined;

/**
 * Builds the route table of one API version once (default 1: the unversioned routes). Each path
 * is registered for every method with one shared entry, so a single lookup tells "route", "known
 * path, wrong method" (405) and "unknown" (404) apart. HEAD is served wherever GET is.
 */
export function createRouteTable(routes: readonly RouteDef[] = ROUTES, version = 1) {
  const router = FindMyWay({
    caseSensitive: true,
    ignoreTrailingSlash: false,
    // Callers pass the path without its query string; nothing to parse.
    querystringParser: () => NO_QUERY,
  });
  const entries = new Map<string, PathEntry>();
  for (const route of routes) {
    if (!versionsOf(route).includes(version)) continue;
    let entry = entries.get(route.path);
    if (!entry) {
      entry = { byMethod: new Map(), allow: '' };
      entries.set(route.path, entry);
    }
    if (entry.byMethod.has(route.method)) throw new Error(`Duplicate route: ${route.method} ${route.path}`);
    entry.byMethod.set(route.method, route);
    if (route.method === 'GET') entry.byMethod.set('HEAD', route);
  }
  for (const [path, entry] of entries) {
    entry.allow = [...entry.byMethod.keys()].join(', ');
    router.all(path, noop, entry);
  }

  return {
    /** `path` is the request path without its query string. */
    match(method: string, path: string): RouteMatch {
      const found = router.find(method as FindMyWay.HTTPMethod, path);
      if (!found) return NOT_FOUND;
      const entry = found.store as PathEntry;
      const route = entry.byMethod.get(method);
      if (route) return { kind: 'route', route, params: found.params };
      return { kind: 'method-not-allowed', allow: entry.allow };
    },
  };
}

export type RouteTable = ReturnType<typeof createRouteTable>;
