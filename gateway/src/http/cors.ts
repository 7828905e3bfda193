import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import type { OriginList } from '@halo/kit/config';
import { sendJson } from '@halo/kit/http';
import { ROUTE_PREFLIGHT, type GatewayResponse, type HeadHook } from '../observability';

/**
 * CORS for everything the gateway serves over HTTP (REST, `/graphql`, `/docs`), from the one
 * origin list (`CORS_ORIGINS`, @halo/kit's OriginList) auth's sign-in check reads too.
 *
 * - A listed `Origin` gets `Access-Control-Allow-Origin: <it>`, `Access-Control-Allow-Credentials:
 *   true` (the refresh cookie) and the exposed headers on every answer, whichever stage (or
 *   service, through the proxy) wrote it: they are set as the head goes out, so nothing downstream
 *   drops them. An unlisted Origin, or none, gets no CORS header at all.
 * - `Vary: Origin` on every answer while the list is not empty (merged into any Vary already
 *   there), so a shared cache never hands one origin's answer to another.
 * - A preflight (`OPTIONS` + `Origin` + `Access-Control-Request-Method`) is answered here, before
 *   routing: 204 with the methods, headers and `Access-Control-Max-Age` for a listed origin, 403
 *   `Origin not allowed` (the contract's error shape) for any other.
 *
 * Written here rather than with the `cors` package: it sets the credentials and exposed-headers
 * fields for unlisted origins too, cannot refuse a preflight, and writes its headers before the
 * proxied service's own, which may replace them.
 */
export interface CorsStage {
  /** Sets the request's CORS up; true when it answered (a preflight). */
  handle(req: IncomingMessage, res: GatewayResponse, path: string): boolean;
}

export const CORS_ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'X-API-Key',
  'Idempotency-Key',
  'apollo-require-preflight',
  'X-Apollo-Operation-Name',
  'graphql-client-name',
  'graphql-client-version',
  // What field usage reads (src/usage/clients.ts), the SDK sending the first two on every GraphQL request.
  'apollographql-client-name',
  'apollographql-client-version',
  'x-client-name',
  'x-client-version',
  'X-Request-Id',
].join(', ');
export const CORS_EXPOSED_HEADERS = [
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'Idempotent-Replayed',
  'Location',
  'X-Request-Id',
  'Deprecation',
  'Sunset',
  'Link',
].join(', ');
/** How long a browser may reuse a preflight answer (seconds); Chromium caps it at 7200. */
export const CORS_MAX_AGE_S = 600;
export const ORIGIN_NOT_ALLOWED = 'Origin not allowed';

export function createCors(origins: OriginList): CorsStage {
  const listed = !origins.empty;
  return {
    handle(req, res, path) {
      const origin = req.headers.origin;
      const allowed = origin !== undefined && origins.allows(origin) ? origin : null;
      if (listed) {
        res.allowedOrigin = allowed;
        res.beforeHead = corsHead;
      }
      if (req.method !== 'OPTIONS' || origin === undefined || req.headers['access-control-request-method'] === undefined) return false;
      res.route = ROUTE_PREFLIGHT;
      if (allowed === null) {
        const body =
          path === '/graphql' || path === '/graphql/stream'
            ? { errors: [{ message: ORIGIN_NOT_ALLOWED, extensions: { code: 'FORBIDDEN' } }] }
            : { error: ORIGIN_NOT_ALLOWED };
        sendJson(res, 403, body);
        return true;
      }
      res.setHeader('Access-Control-Allow-Methods', CORS_ALLOWED_METHODS);
      res.setHeader('Access-Control-Allow-Headers', CORS_ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', String(CORS_MAX_AGE_S));
      res.statusCode = 204;
      res.end();
      return true;
    },
  };
}

/** The HeadHook: the CORS fields and `Vary: Origin`, whatever the answering stage set before. */
const corsHead: HeadHook = (res, headers) => {
  const origin = res.allowedOrigin;
  if (origin !== null) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    if (res.getHeader('access-control-allow-methods') === undefined) res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS);
  }
  if (headers === undefined || Array.isArray(headers)) {
    res.setHeader('Vary', withOrigin(res.getHeader('vary')));
    return headers;
  }
  // writeHead's own headers win over those set before: amend a copy (the caller's may be shared).
  let amended: OutgoingHttpHeaders | undefined;
  let varied = false;
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (lower === 'vary') varied = true;
    if (lower === 'vary' || (origin !== null && OURS.has(lower))) {
      amended ??= { ...headers };
      delete amended[name];
      if (lower === 'vary') amended.vary = withOrigin(headers[name]);
    }
  }
  if (!varied) res.setHeader('Vary', withOrigin(res.getHeader('vary')));
  return amended ?? headers;
};

/** What a listed origin's answer gets from here, whatever the stage that answered said (a public document's `*`). */
const OURS = new Set(['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers']);

function withOrigin(vary: OutgoingHttpHeader | undefined): string {
  if (vary === undefined) return 'Origin';
  const text = Array.isArray(vary) ? vary.join(', ') : String(vary);
  if (text.trim() === '') return 'Origin';
  if (text.trim() === '*' || /(^|,)\s*origin\s*(,|$)/i.test(text)) return text;
  return `${text}, Origin`;
}
