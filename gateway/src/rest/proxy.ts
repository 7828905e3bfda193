import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { Pool, type Dispatcher } from 'undici';
import { SERVICE_TOKEN_METADATA, type ServiceIdentity } from '@halo/kit/auth';
import { trustedCallersOf, type EdgeServiceName } from '@halo/kit/config';
import { sendJson } from '@halo/kit/http';
import { REQUEST_ID_HEADER, type Logger, boundRequestId } from '@halo/kit/logging';
import {
  clientOf,
  hasBody,
  isEncoded,
  isJsonType,
  parseJson,
  payloadTooLarge,
  readBody,
  sendBodyError,
  sendOnNewConnection,
  CLOSED_UNDER_REQUEST,
  TIMED_OUT,
  type TrustedProxies,
  type UpstreamTimeouts,
} from '../http';
import type { GatewayMetrics } from '../observability';

/**
 * The REST proxy: undici straight to the service (ADR 0014), one keep-alive pool per service; per
 * request a header object, one dispatch and its handler, the answer streamed as it arrives.
 *
 * - Headers: hop-by-hop ones (RFC 9110 §7.6.1, and any the Connection header names) are dropped
 *   both ways. `X-Forwarded-*` are the gateway's (src/http/forwarded.ts): from a trusted proxy its
 *   `-Port/-Proto` are appended to and `-Host` kept, from anyone else all are replaced; the last
 *   `X-Forwarded-For` entry is always the client. To a service that trusts the gateway's key
 *   (auth) the gateway vouches for them with its service token (`x-halo-service-token`, audience
 *   that service): auth believes forwarded headers only with it. A client's own such token is
 *   never relayed. `Host` stays the client's, as with http-proxy's `changeOrigin: false`.
 * - Bodies: a JSON body (not compressed) is read and checked here first, so malformed JSON and
 *   invalid UTF-8 are 400 `Invalid JSON` at the edge, then sent with its Content-Length. Any other
 *   body streams through, counted: over `bodyLimit` (declared or as it arrives) it is 413 and the
 *   upstream request is aborted.
 * - Answers: streamed back with status and headers; an error status or a caller with credentials
 *   is `no-store` whatever the service said (docs/api/conventions.md). No answer within
 *   `timeoutMs` (to connect, for the answer head, between answer chunks) → 504, nobody listening
 *   → 503, anything else → 502.
 * - A client that leaves aborts the upstream request (its socket is destroyed, not pooled).
 */

export interface ProxyOptions {
  targets: Record<EdgeServiceName, string>;
  /** Socket inactivity (connecting included) before an upstream request is given up: 504. */
  timeoutMs: number;
  /** The contract's body limit (`BODY_LIMIT`). */
  bodyLimit: number;
  logger: Logger;
  /** Connections per service; requests beyond wait in the pool's queue. */
  maxSockets?: number;
  /** Times each upstream request until the service's answer headers (src/observability/metrics.ts). */
  metrics?: Pick<GatewayMetrics, 'upstream'>;
  /** Whose `X-Forwarded-*` to keep (`GATEWAY_TRUSTED_PROXIES`); null: nobody's. */
  trustedProxies?: TrustedProxies | null;
  /** The gateway's identity: its token goes with each request to a service that trusts its key. */
  identity?: ServiceIdentity | null;
}

/** Connection errors that mean "the service is not there" rather than "it answered badly". */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Connection-specific fields (RFC 9110 §7.6.1), plus `Trailer`: trailers are not relayed, and
 * `Expect`: the gateway's server already answered `100 Continue` to the client.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'transfer-encoding', 'upgrade', 'trailer']);
/**
 * Requests also lose the client's W3C trace context: the gateway's HTTP instrumentation has
 * already joined the client's trace, and its undici instrumentation writes the gateway's own span
 * as the upstream request's `traceparent` (and `tracestate`, `baggage`). A copy of the client's
 * would make a second field, which the service reads as none (its span a new root). A client's
 * own service token is never relayed either (the gateway sends its own where a service trusts it).
 */
const HOP_BY_HOP_REQUEST = new Set([...HOP_BY_HOP, 'expect', SERVICE_TOKEN_METADATA, 'traceparent', 'tracestate', 'baggage']);
/** From a peer that is not a trusted proxy, its `X-Forwarded-*` are not copied either (replaced below). */
const HOP_BY_HOP_UNTRUSTED = new Set([...HOP_BY_HOP_REQUEST, 'x-forwarded-port', 'x-forwarded-proto', 'x-forwarded-host']);

/** A Connection header that names nothing beyond the usual two tokens (the common case). */
const PLAIN_CONNECTION = /^\s*(?:keep-alive|close)\s*$/i;

/** The extra fields a Connection header names (lower case), or null when it names none. */
export function connectionTokens(connection: string | string[] | undefined): Set<string> | null {
  if (connection === undefined) return null;
  const value = Array.isArray(connection) ? connection.join(',') : connection;
  if (PLAIN_CONNECTION.test(value)) return null;
  const tokens = new Set<string>();
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase();
    if (t) tokens.add(t);
  }
  return tokens.size > 0 ? tokens : null;
}

const HOST_PORT = /:(\d+)$/;
const CLOSE = Object.freeze({ connection: 'close' });

/**
 * The headers the service receives: the client's, minus hop-by-hop and trace context, with the request id of the
 * request context (the client's only when it was sane), plus the X-Forwarded-* set.
 */
export function upstreamHeaders(req: IncomingMessage, trusted: TrustedProxies | null = null): OutgoingHttpHeaders {
  const incoming = req.headers;
  const named = connectionTokens(incoming.connection);
  // Judged once per request (the rate limits asked first): the chain, and whether the peer is trusted.
  const client = clientOf(req, trusted);
  // What a client says about the way it came is not believed: only a trusted proxy's is.
  const dropped = client.peerTrusted ? HOP_BY_HOP_REQUEST : HOP_BY_HOP_UNTRUSTED;
  const out: OutgoingHttpHeaders = {};
  for (const name in incoming) {
    if (dropped.has(name) || (named !== null && named.has(name))) continue;
    out[name] = incoming[name];
  }
  const requestId = boundRequestId(req);
  if (requestId !== undefined) out[REQUEST_ID_HEADER] = requestId;
  const encrypted = (req.socket as TLSSocket).encrypted === true;
  const host = incoming.host;
  const port = host !== undefined ? HOST_PORT.exec(host)?.[1] : undefined;
  out['x-forwarded-for'] = client.forwardedFor;
  appendForwarded(out, 'x-forwarded-port', port ?? (encrypted ? '443' : '80'));
  appendForwarded(out, 'x-forwarded-proto', encrypted ? 'https' : 'http');
  if (out['x-forwarded-host'] === undefined) out['x-forwarded-host'] = host ?? '';
  return out;
}

function appendForwarded(headers: OutgoingHttpHeaders, name: string, value: string): void {
  const prior = headers[name];
  headers[name] = prior ? `${String(prior)},${value}` : value;
}

/**
 * Copies the service's answer head onto `res`, minus hop-by-hop, with the Cache-Control rule (and,
 * on a 429, without the gateway's RateLimit fields). Repeated fields are joined as node's own client
 * joins them (Set-Cookie stays a list).
 */
function copyResponseHead(
  status: number,
  statusMessage: string | undefined,
  headers: IncomingHttpHeaders,
  req: IncomingMessage,
  res: ServerResponse,
  mediaType: string | undefined,
): void {
  const named = connectionTokens(headers.connection);
  // A service's refusal (auth's login lockout) is not the gateway's limit: the gateway's RateLimit
  // fields would describe quota left on another limit. Its own Retry-After (and RateLimit, if it
  // sends one) stand.
  if (status === 429) {
    res.removeHeader('ratelimit');
    res.removeHeader('ratelimit-policy');
  }
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || (named !== null && named.has(name))) continue;
    const value = headers[name]!;
    res.setHeader(name, Array.isArray(value) && name !== 'set-cookie' ? value.join(', ') : value);
  }
  // A service's Cache-Control stands for its public answers; an error, or an answer to a caller
  // with credentials, is never stored. Without one, the gateway's default no-store stays.
  if (status >= 400 || hasCredentials(req.headers)) res.setHeader('cache-control', 'no-store');
  // A version negotiated on the unversioned path: its JSON answer is labelled as that version.
  if (mediaType !== undefined && status < 300) relabel(res, headers['content-type'], mediaType);
  res.statusCode = status;
  if (statusMessage) res.statusMessage = statusMessage;
}

/** `application/json; charset=utf-8` → `<mediaType>; charset=utf-8`; any other type is left alone. */
function relabel(res: ServerResponse, type: string | undefined, mediaType: string): void {
  if (type === undefined || !type.startsWith(JSON_TYPE)) return;
  const rest = type.slice(JSON_TYPE.length);
  if (rest === '' || rest.startsWith(';')) res.setHeader('content-type', mediaType + rest);
}

const JSON_TYPE = 'application/json';

const hasCredentials = (headers: IncomingHttpHeaders) => headers.authorization !== undefined || headers['x-api-key'] !== undefined;

interface Target {
  service: EdgeServiceName;
  /** The service's keep-alive connections (undici: one request at a time on each, no pipelining). */
  pool: Pool;
  origin: string;
  timeouts: UpstreamTimeouts;
  /** The base URL's path, if any (`http://host/base` → `/base`), put before every request path. */
  prefix: string;
  /** The gateway's service token for this service (one that trusts the gateway's key), else null. */
  vouch: (() => Promise<string>) | null;
}

/** What a failure the gateway answers for says about the upstream, in the metrics. */
const FAILED_AS = { 502: 'error', 503: 'unreachable', 504: 'timeout' } as const;

/** What every proxied request of one gateway needs, made once. */
interface Proxying {
  bodyLimit: number;
  logger: Logger;
  metrics: Pick<GatewayMetrics, 'upstream'> | undefined;
  trustedProxies: TrustedProxies | null;
}

export function createServiceProxies({
  targets,
  timeoutMs,
  bodyLimit,
  logger,
  maxSockets = 256,
  metrics,
  trustedProxies = null,
  identity = null,
}: ProxyOptions) {
  const p: Proxying = { bodyLimit, logger, metrics, trustedProxies };
  const byService = new Map<EdgeServiceName, Target>();
  for (const [service, target] of Object.entries(targets) as [EdgeServiceName, string][]) {
    const url = new URL(target);
    // Each a 504: no connection, no answer head, or silence within the answer body.
    const timeouts = { connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
    const pool = new Pool(url.origin, { connections: maxSockets, pipelining: 1, ...timeouts });
    const vouch = identity?.canCall && trustedCallersOf(service).includes('gateway') ? () => identity.tokenFor(service) : null;
    byService.set(service, { pool, origin: url.origin, timeouts, service, prefix: url.pathname.replace(/\/+$/, ''), vouch });
  }

  return {
    /**
     * Forwards the request to the service (the route's version rewrite already in `req.url`).
     * Without a body it goes at once; a JSON body is read and checked first; any other streams.
     */
    forward(service: EdgeServiceName, req: IncomingMessage, res: ServerResponse, mediaType?: string): void {
      const target = byService.get(service);
      if (!target) {
        logger.error({ requestId: boundRequestId(req), service }, 'no upstream configured for the service');
        sendJson(res, 502, { error: 'Bad gateway' });
        return;
      }
      if (!hasBody(req)) return exchange(p, target, req, res, undefined, mediaType);
      // A compressed body is the service's to decode (and judge); only plain JSON is checked.
      if (isEncoded(req) || !isJsonType(req.headers['content-type'])) {
        const declared = req.headers['content-length'];
        if (declared !== undefined && Number(declared) > bodyLimit) return sendBodyError(res, payloadTooLarge(), logger);
        return exchange(p, target, req, res, null, mediaType);
      }
      readBody(req, bodyLimit).then(
        (body) => {
          try {
            parseJson(body);
          } catch (err) {
            return sendBodyError(res, err, logger);
          }
          exchange(p, target, req, res, body, mediaType);
        },
        (err: unknown) => sendBodyError(res, err, logger),
      );
    },
    /** Drops the pooled upstream connections (after the server has drained). */
    async close(): Promise<void> {
      await Promise.all([...byService.values()].map((target) => target.pool.destroy()));
    },
  };
}

export type ServiceProxies = ReturnType<typeof createServiceProxies>;

/**
 * One proxied request, dispatched on the service's undici pool. `body`: bytes already read (JSON);
 * null: stream `req`; undefined: none.
 */
function exchange(
  p: Proxying,
  target: Target,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer | null | undefined,
  mediaType: string | undefined,
  attempt = 1,
  token?: string,
): void {
  if (target.vouch !== null && token === undefined) {
    target.vouch().then(
      (t) => exchange(p, target, req, res, body, mediaType, attempt, t),
      (err: unknown) => {
        p.logger.error({ err, requestId: boundRequestId(req), service: target.service }, 'no service token for the upstream');
        sendJson(res, 502, { error: 'Bad gateway' });
      },
    );
    return;
  }
  const headers = upstreamHeaders(req, p.trustedProxies);
  if (token !== undefined) headers[SERVICE_TOKEN_METADATA] = token;
  // Without a Content-Length undici sends a streamed body chunked (the incoming
  // Transfer-Encoding is hop-by-hop and not copied).
  if (body) headers['content-length'] = String(body.length);
  const retry = attempt === 1 && body === undefined && SAFE_METHODS.has(req.method ?? '');
  const handler = new Exchange(p, target, req, res, body === null, retry, mediaType);
  const stream = body === null ? countedBody(req, p.bodyLimit, () => handler.tooLarge()) : null;
  // 'close' without a finished answer: the client left (or the gateway destroyed the answer).
  if (attempt === 1) res.on('close', () => exchangeOf.get(res)?.closed());
  exchangeOf.set(res, handler);
  const request: Dispatcher.DispatchOptions = {
    method: req.method as Dispatcher.HttpMethod,
    path: target.prefix + (req.url ?? '/'),
    headers: headers as Record<string, string | string[]>,
    body: body ?? stream,
  };
  if (attempt === 1) target.pool.dispatch(request, handler);
  else sendOnNewConnection(target.origin, target.timeouts, request, handler);
}

/**
 * The state of one proxied request and undici's handler for it: one object per request (its
 * methods shared), where a closure per callback would be eight.
 */
class Exchange implements Dispatcher.DispatchHandler {
  /**
   * Set once the gateway has answered (413, 5xx) or the client is gone: upstream events are then
   * ignored (an abort's own error is not a 502).
   */
  private done = false;
  /** The service's answer head arrived (what the metrics time; a later failure is not counted again). */
  private answered = false;
  private controller: Dispatcher.DispatchController | null = null;
  /** Resumes the upstream answer once the client's buffer drains: made on the first pause only. */
  private onDrain: (() => void) | null = null;
  private readonly sentAt: bigint;

  constructor(
    private readonly p: Proxying,
    private readonly target: Target,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    /** The request body streams (rather than having been read whole, or there being none). */
    private readonly streamed: boolean,
    /** A safe request without a body, not yet sent again: it may go once more (below). */
    private readonly retry: boolean,
    /** The negotiated version's Content-Type for a successful JSON answer (src/rest/versioning.ts). */
    private readonly mediaType: string | undefined,
  ) {
    this.sentAt = p.metrics ? process.hrtime.bigint() : 0n;
  }

  /** The streamed body went over the limit: 413 (with `Connection: close`; the rest is discarded). */
  tooLarge(): void {
    this.done = true;
    this.controller?.abort(CLIENT_GONE);
    sendBodyError(this.res, payloadTooLarge(), this.p.logger);
  }

  /** The client's response closed. */
  closed(): void {
    if (this.res.writableFinished) return;
    this.done = true;
    this.controller?.abort(CLIENT_GONE);
  }

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    // The client left while the request waited for a connection: it is not sent.
    if (this.done) c.abort(CLIENT_GONE);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    // 1xx (103 Early Hints) is not relayed: the gateway's server speaks for itself.
    if (status < 200) return;
    this.answered = true;
    this.p.metrics?.upstream(this.target.service, status, this.sentAt);
    // Ignored from here on: the rest of the answer is read so that the connection is kept.
    if (this.done || this.res.destroyed) return;
    copyResponseHead(status, statusMessage, headers, this.req, this.res, this.mediaType);
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.res;
    if (this.done || res.destroyed) return;
    if (res.write(chunk)) return;
    c.pause();
    if (this.onDrain === null) res.on('drain', (this.onDrain = () => c.resume()));
  }

  onResponseEnd(): void {
    if (!this.done && !this.res.destroyed) this.res.end();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: NodeJS.ErrnoException): void {
    if (this.done) return;
    const code = err.code;
    // A kept-alive connection the service closed as the request went out (a pod draining in a
    // rolling update, an idle timeout): no answer came, and a GET changes nothing, so it goes once
    // more, on a new connection (src/http/upstream.ts). Anything else may have run: its failure stands.
    if (this.retry && !this.answered && code !== undefined && CLOSED_UNDER_REQUEST.has(code)) {
      this.done = true;
      return exchange(this.p, this.target, this.req, this.res, undefined, this.mediaType, 2);
    }
    // Nobody listening (a service down or restarting): say so, and fast (docs/api/conventions.md).
    if (code !== undefined && TIMED_OUT.has(code)) this.fail(504, 'Gateway timeout', 'ETIMEDOUT', err);
    else if (code !== undefined && UNREACHABLE.has(code)) this.fail(503, 'Service unavailable', code, err);
    else this.fail(502, 'Bad gateway', code, err);
  }

  private fail(status: 502 | 503 | 504, message: string, code: string | undefined, err: Error): void {
    this.done = true;
    const { req, res, target } = this;
    if (!this.answered) this.p.metrics?.upstream(target.service, FAILED_AS[status], this.sentAt);
    this.p.logger.error(
      { requestId: boundRequestId(req), service: target.service, code, message: err.message },
      status === 504 ? 'upstream timed out' : 'upstream request failed',
    );
    if (res.headersSent || res.destroyed) return void res.destroy();
    // A body still streaming in is not read any further: the connection cannot be reused.
    sendJson(res, status, { error: message }, this.streamed && !req.complete ? CLOSE : undefined);
  }
}

/** Methods that change nothing (RFC 9110 §9.2.1): sent again when their connection closed under them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Each response's current exchange (a request sent again has a second one): what the client leaving aborts. */
const exchangeOf = new WeakMap<ServerResponse, Exchange>();

/** Why the gateway aborts an upstream request itself (never reported: `done` is set first). */
const CLIENT_GONE = new Error('the gateway gave the request up');

/**
 * A streamed request body counted against the limit, with backpressure both ways. Over the limit,
 * `tooLarge` answers and the body ends in an error (undici aborts the upstream request); the
 * client's own stream is left alone, so that the 413 can still reach it.
 */
function countedBody(req: IncomingMessage, bodyLimit: number, tooLarge: () => void): Readable {
  let received = 0;
  let over = false;
  const out = new Readable({
    read() {
      req.resume();
    },
  });
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    received += chunk.length;
    if (received > bodyLimit) {
      over = true;
      tooLarge();
      out.destroy(payloadTooLarge());
      return;
    }
    if (!out.push(chunk)) req.pause();
  });
  req.on('end', () => {
    if (!over) out.push(null);
  });
  return out;
}
