import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { load } from '../process/lazy';
import { HaloError, isHaloError, toRestError } from '../errors/errors';
import type { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import { deeperThan, JSON_TOO_DEEP, MAX_JSON_DEPTH } from './json-depth';
import { BODY_MAY_HOLD_NUL, findNul, nulError, rawJsonMayHoldNul } from './nul';
import { logRequest } from '../logging/access-log';
import { runInRequest } from '../logging/request-context';
import { REQUEST_ID_HEADER, saneRequestId } from '../logging/request-id';

export { REQUEST_ID_HEADER };

declare module 'express-serve-static-core' {
  interface Request {
    /** The request id: the caller's `X-Request-Id` when it is sane, otherwise a fresh UUID. */
    id: string;
    /** The service's logger; inside the request it writes the request id on every line by itself. */
    log: Logger;
  }
}

/** The request id of an incoming HTTP request: the caller's when sane, otherwise a fresh UUID. */
export function requestIdOf(req: IncomingMessage): string {
  return saneRequestId(req.headers[REQUEST_ID_HEADER]);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

/**
 * `/healthz` answers while the process runs; `/readyz` runs a real dependency check and fails as
 * soon as shutdown starts, so a load balancer stops sending traffic before we stop serving it.
 */
export function healthCheck(lifecycle: Lifecycle, ready: () => Promise<void>) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const path = req.url?.split('?')[0];
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path !== '/readyz') return next();
    if (!lifecycle.accepting) return sendJson(res, 503, { status: 'shutting down' });
    ready().then(
      () => sendJson(res, 200, { status: 'ready' }),
      // A NotReady names its reason (written for an operator); any other failure (a database
      // error) stays unnamed here and goes to the log where it happens.
      (err: unknown) => sendJson(res, 503, { status: 'unavailable', ...(err instanceof NotReady ? { reason: err.message } : {}) }),
    );
  };
}

/** A readiness check's refusal whose message `/readyz` may show (no secret, no internal detail). */
export class NotReady extends Error {}

/**
 * Request id (kept in the request context for everything the request runs, so logs and outgoing
 * gRPC calls carry it) and one access-log line per request.
 */
export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const requestId = requestIdOf(req);
    req.id = requestId;
    req.log = logger;
    res.setHeader('X-Request-Id', requestId);
    runInRequest({ requestId }, serveInContext, logger, req, res, next);
  };
}

/** The rest of the request, inside its context (a function of its own: no closure per request). */
function serveInContext(logger: Logger, req: Request, res: Response, next: NextFunction): void {
  if (logger.isLevelEnabled('info')) logRequest(logger, req, res, 'url', req.originalUrl);
  next();
}

/**
 * JSON bodies with the contract's 400 `Invalid JSON` / 413 `Payload too large` answers, and 400
 * `JSON nested deeper than 64 levels` (json-depth.ts) before any route walks the body.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = jsonParser(limitBytes);
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      if (err === undefined && deeperThan(req.body, MAX_JSON_DEPTH)) return next(new HaloError('BAD_REQUEST', JSON_TOO_DEEP));
      next(err);
    });
}

function jsonParser(limitBytes: number): RequestHandler {
  return load.express().json({
    limit: limitBytes,
    strict: false,
    // JSON is UTF-8 (RFC 8259): bytes that are not would be stored as U+FFFD, silently changed.
    verify: (req, _res, buf) => {
      try {
        STRICT_UTF8.decode(buf);
      } catch {
        throw Object.assign(new SyntaxError('request body is not valid UTF-8'), { status: 400, type: 'entity.parse.failed' });
      }
      // Read by refuseNulInput: only a body with this escape can hold a NUL character.
      if (rawJsonMayHoldNul(buf)) (req as { [BODY_MAY_HOLD_NUL]?: boolean })[BODY_MAY_HOLD_NUL] = true;
    },
  });
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Registers a path with its allowed methods and answers 405 (with `Allow`) for any other method,
 * so "wrong method on a known path" never looks like "unknown route".
 */
export function route(
  router: Router,
  path: string,
  handlers: Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', RequestHandler>>,
): void {
  const r = router.route(path);
  const allowed: string[] = [];
  for (const [method, handler] of Object.entries(handlers)) {
    // Path parameters are named only here, after routing: the NUL rule's third input (kit/src/http/nul.ts).
    r[method as 'get']((req, res, next) => {
      const field = findNul(req.params, 'path');
      return field === null ? handler(req, res, next) : next(nulError(field));
    });
    allowed.push(method.toUpperCase());
  }
  if (allowed.includes('GET')) allowed.push('HEAD');
  r.all((_req, res) => {
    res.setHeader('Allow', allowed.join(', '));
    res.status(405).json({ error: 'Method not allowed' });
  });
}

export const notFoundHandler: RequestHandler = (_req, res) => {
  res.status(404).json({ error: 'Not found' });
};

/** Maps every error once: HaloError → its status, body-parser errors → 400/413, the rest → 500. */
export function errorHandler(): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const e = err as { type?: string; status?: number };
    let mapped: unknown = err;
    if (e?.type === 'entity.parse.failed') mapped = new HaloError('BAD_REQUEST', 'Invalid JSON');
    else if (e?.type === 'entity.too.large') mapped = new HaloError('PAYLOAD_TOO_LARGE', 'Payload too large');
    else if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
      mapped = new HaloError('BAD_REQUEST', 'Unsupported content encoding');
    // The router could not percent-decode a path parameter (e.g. `/posts/%zz`): a bad id, not a crash.
    else if (err instanceof URIError) mapped = new HaloError('BAD_REQUEST', 'Invalid id');
    // Other client errors raised by express/body-parser (aborted or malformed requests).
    else if (!isHaloError(err) && typeof e?.status === 'number' && e.status >= 400 && e.status < 500)
      mapped = new HaloError('BAD_REQUEST', 'Bad request');
    const { status, body } = toRestError(mapped);
    if (status >= 500) (req.log ?? console).error({ err }, 'request failed');
    if (res.headersSent) return res.end();
    res.status(status).json(body);
  };
}
