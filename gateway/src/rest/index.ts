import type { IncomingMessage, ServerResponse } from 'node:http';
import { TOKEN_REQUIRED } from '@halo/kit/auth';
import type { EdgeServiceName } from '@halo/kit/config';
import { toRestError } from '@halo/kit/errors';
import { sendJson } from '@halo/kit/http';
import { type Logger, boundRequestId } from '@halo/kit/logging';
import type { CallerResolver } from '../auth';
import type { GatewayResponse } from '../observability';
import type { RateLimits, RateLimitTicket } from '../ratelimit';
import type { ServiceProxies } from './proxy';
import type { RouteDef } from './routes';
import type { Versioning } from './versioning';

export { connectionTokens, createServiceProxies, upstreamHeaders, type ProxyOptions, type ServiceProxies } from './proxy';
export { createRouteTable, DEFAULT_ROUTES_PATH, parseRouteTable, type RouteDef, type RouteTable, type RouteTableFile } from './routes';
export { createVersioning, type Versioning } from './versioning';

export interface RestStageOptions {
  /** The route table at start-up; `setRoutes` swaps in a new composition's. */
  routes: Versioning;
  proxies: ServiceProxies;
  callers: CallerResolver;
  /** Requests per caller (src/ratelimit); null: unlimited. */
  rateLimits?: RateLimits | null;
  logger: Logger;
}

/**
 * The REST stage: the composed route table, versioning, the rate limits, the caller check of
 * protected routes and the proxy. `serve` answers the request when the table knows its path and
 * returns false when it does not, so the documents and the 404 can have it.
 */
export function createRestStage({ routes: initial, proxies, callers, rateLimits = null, logger }: RestStageOptions) {
  // Read per request: swapped whole when a new composition arrives.
  let routes = initial;
  // `mediaType`: the negotiated version's Content-Type (src/rest/versioning.ts), if any.
  const forwardIfCaller = (service: EdgeServiceName, req: IncomingMessage, res: ServerResponse, mediaType: string | undefined) =>
    callers.resolve(req).then(
      (caller) => {
        if (!caller) return sendJson(res, 401, { error: TOKEN_REQUIRED });
        proxies.forward(service, req, res, mediaType);
      },
      (err: unknown) => sendError(res, err, logger),
    );
  const forward = (route: RouteDef, req: IncomingMessage, res: ServerResponse, mediaType: string | undefined) => {
    // The proxy reads and checks a JSON body (413, 400 Invalid JSON) and streams any other.
    if (!route.auth) proxies.forward(route.service, req, res, mediaType);
    // Protected: no caller, no proxying (docs/api/auth.md: 401 Token required / Invalid token).
    else void forwardIfCaller(route.service, req, res, mediaType);
  };
  // Counted per caller before anything is proxied; bad credentials count by address (the caller
  // check below answers them: the same promise, verified once).
  const admitThenForward = (
    limits: RateLimits,
    route: RouteDef,
    req: IncomingMessage,
    res: ServerResponse,
    mediaType: string | undefined,
  ): Promise<void> => {
    const forwardIfAdmitted = (ticket: RateLimitTicket | null) => {
      if (ticket !== null) forward(route, req, res, mediaType);
    };
    // Without credentials the caller is known at once: nobody (no promise to wait for).
    if (!hasCredentials(req)) return limits.admit(req, res, null, 'rest').then(forwardIfAdmitted);
    return callers
      .resolve(req)
      .catch(() => null)
      .then((caller) => limits.admit(req, res, caller, 'rest'))
      .then(forwardIfAdmitted);
  };
  return {
    setRoutes(next: Versioning): void {
      routes = next;
    },
    serve(req: IncomingMessage, res: GatewayResponse, url: string, q: number, path: string): boolean {
      const match = routes.match(req, url, q, path);
      if (match.headers) for (const name in match.headers) res.setHeader(name, match.headers[name]!);
      if (match.kind === 'route') {
        res.route = match.route.path;
        // A versioned request goes to the path that serves its version (e.g. /api/v2/products → /v2/products).
        if (match.url !== undefined) req.url = match.url;
        if (rateLimits === null) forward(match.route, req, res, match.mediaType);
        else admitThenForward(rateLimits, match.route, req, res, match.mediaType).catch((err: unknown) => sendError(res, err, logger));
        return true;
      }
      if (match.kind === 'method-not-allowed') {
        sendJson(res, 405, { error: 'Method not allowed' }, { allow: match.allow });
        return true;
      }
      if (match.kind === 'unsupported-version') {
        sendJson(res, 400, { error: match.error });
        return true;
      }
      return false;
    },
  };
}

export type RestStage = ReturnType<typeof createRestStage>;

/** What `callers.resolve` reads: without either, the caller is anonymous. */
const hasCredentials = (req: IncomingMessage) => req.headers.authorization !== undefined || req.headers['x-api-key'] !== undefined;

/** A HaloError as its REST answer; anything else is logged and answered 500 without details. */
function sendError(res: ServerResponse, err: unknown, logger: Logger): void {
  const { status, body } = toRestError(err);
  if (status >= 500) logger.error({ err, requestId: boundRequestId(res.req) }, 'request failed');
  if (!res.headersSent) sendJson(res, status, body);
}
