import { resolve } from 'node:path';
import FindMyWay from 'find-my-way';
import { composedRouteTableSchema, type ComposedRoute, type ComposedRouteTable } from '@halo/kit/rest';
import { GATEWAY_DIR } from '../paths';

/**
 * One public REST route and the service that answers it, as the composed route table
 * (gateway/routes.json, from the services' manifests by `npm run compose`) lists it. The gateway
 * forwards the request unchanged.
 *
 * - `auth`: the gateway refuses the request without a caller (401 `Token required` / `Invalid
 *   token` / `Invalid API key`) before it reaches the service; the service checks roles and scopes.
 * - `versions`: the API versions the route exists in (default `[1]`: unversioned, and `/api/v1/…`).
 *   The service serves version N of it at that version's upstream prefix + path (src/rest/versioning.ts).
 * - `deprecated`: per version, the notice its responses carry (`Deprecation`, `Sunset`, `Link`).
 */
export type RouteDef = Readonly<ComposedRoute>;
export type HttpMethod = RouteDef['method'];
export type RouteTableFile = ComposedRouteTable;

/** The composed route table committed beside the package (`npm run compose` writes it). */
export const DEFAULT_ROUTES_PATH = resolve(GATEWAY_DIR, 'routes.json');

/** Parses and checks a composed route table (the format kit's `composeRouteTable` writes). */
export function parseRouteTable(text: string): RouteTableFile {
  const parsed = composedRouteTableSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid route table at ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

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
export function createRouteTable(routes: readonly RouteDef[], version = 1) {
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
