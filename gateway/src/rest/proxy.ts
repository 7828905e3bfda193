import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { requestContextOf, REQUEST_ID_HEADER, sendJson, type Logger, type EdgeServiceName } from '@halo/kit';
import {
  clientOf,
  hasBody,
  isEncoded,
  isJsonType,
  parseJson,
  payloadTooLarge,
  readBody,
  sendBodyError,
  upstreamOrigin,
  type TrustedProxies,
  type UpstreamOrigin,
} from '../http';
import type { GatewayMetrics } from '../observability';

/**
 * The REST proxy: node:http straight to the service, one keep-alive pool per service, nothing
 * else per request than the outgoing request, its header object and a few listeners.
 *
 * - Headers: hop-by-hop ones (RFC 9110 §7.6.1, and any the Connection header names) are dropped
 *   both ways. `X-Forwarded-*` are the gateway's (src/http/forwarded.ts): from a trusted proxy its
 *   `-Port/-Proto` are appended to and `-Host` kept, from anyone else all are replaced; the last
 *   `X-Forwarded-For` entry is always the client (auth's `trust proxy` reads that one hop).
 *   `Host` stays the client's, as with http-proxy's `changeOrigin: false`.
 * - Bodies: a JSON body (not compressed) is read and checked here first, so malformed JSON and
 *   invalid UTF-8 are 400 `Invalid JSON` at the edge, then sent with its Content-Length. Any other
 *   body streams through, counted: over `bodyLimit` (declared or as it arrives) it is 413 and the
 *   upstream request is aborted.
 * - Answers: streamed back with status and headers; an error status or a caller with credentials
 *   is `no-store` whatever the service said (docs/api/conventions.md). No answer within
 *   `timeoutMs` of socket inactivity → 504, nobody listening → 503, anything else → 502.
 * - A client that leaves aborts the upstream request (its socket is destroyed, not pooled).
 */

export interface ProxyOptions {
  targets: Record<EdgeServiceName, string>;
  /** Socket inactivity (connecting included) before an upstream request is given up: 504. */
  timeoutMs: number;
  /** The contract's body limit (`BODY_LIMIT`). */
  bodyLimit: number;
  logger: Logger;
  /** Sockets per service; requests beyond wait in the agent's queue. */
  maxSockets?: number;
  /** Times each upstream request until the service's answer headers (src/observability/metrics.ts). */
  metrics?: Pick<GatewayMetrics, 'upstream'>;
  /** Whose `X-Forwarded-*` to keep (`GATEWAY_TRUSTED_PROXIES`); null: nobody's. */
  trustedProxies?: TrustedProxies | null;
}

/** Connection errors that mean "the service is not there" rather than "it answered badly". */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Connection-specific fields (RFC 9110 §7.6.1), plus `Trailer`: trailers are not relayed, and
 * `Expect`: the gateway's server already answered `100 Continue` to the client.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'transfer-encoding', 'upgrade', 'trailer']);
const HOP_BY_HOP_REQUEST = new Set([...HOP_BY_HOP, 'expect']);

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
 * The headers the service receives: the client's, minus hop-by-hop, with the request id of the
 * request context (the client's only when it was sane), plus the X-Forwarded-* set.
 */
export function upstreamHeaders(req: IncomingMessage, trusted: TrustedProxies | null = null): OutgoingHttpHeaders {
  const incoming = req.headers;
  const named = connectionTokens(incoming.connection);
  const out: OutgoingHttpHeaders = {};
  for (const name in incoming) {
    if (HOP_BY_HOP_REQUEST.has(name) || (named !== null && named.has(name))) continue;
    out[name] = incoming[name];
  }
  const requestId = requestContextOf(req)?.requestId;
  if (requestId !== undefined) out[REQUEST_ID_HEADER] = requestId;
  const encrypted = (req.socket as TLSSocket).encrypted === true;
  const host = incoming.host;
  const port = host !== undefined ? HOST_PORT.exec(host)?.[1] : undefined;
  // Judged once per request (the rate limits asked first): the chain, and whether the peer is trusted.
  const client = clientOf(req, trusted);
  out['x-forwarded-for'] = client.forwardedFor;
  if (!client.peerTrusted) {
    // What a client says about the way it came is not believed: only a trusted proxy's is.
    delete out['x-forwarded-port'];
    delete out['x-forwarded-proto'];
    delete out['x-forwarded-host'];
  }
  appendForwarded(out, 'x-forwarded-port', port ?? (encrypted ? '443' : '80'));
  appendForwarded(out, 'x-forwarded-proto', encrypted ? 'https' : 'http');
  if (out['x-forwarded-host'] === undefined) out['x-forwarded-host'] = host ?? '';
  return out;
}

function appendForwarded(headers: OutgoingHttpHeaders, name: string, value: string): void {
  const prior = headers[name];
  headers[name] = prior ? `${String(prior)},${value}` : value;
}

/** Copies the service's answer head onto `res`, minus hop-by-hop, with the Cache-Control rule. */
function copyResponseHead(upstream: IncomingMessage, req: IncomingMessage, res: ServerResponse): void {
  const status = upstream.statusCode ?? 502;
  const headers = upstream.headers;
  const named = connectionTokens(headers.connection);
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || (named !== null && named.has(name))) continue;
    res.setHeader(name, headers[name]!);
  }
  // A service's Cache-Control stands for its public answers; an error, or an answer to a caller
  // with credentials, is never stored. Without one, the gateway's default no-store stays.
  if (status >= 400 || hasCredentials(req.headers)) res.setHeader('cache-control', 'no-store');
  res.statusCode = status;
  if (upstream.statusMessage) res.statusMessage = upstream.statusMessage;
}

const hasCredentials = (headers: IncomingHttpHeaders) => headers.authorization !== undefined || headers['x-api-key'] !== undefined;

interface Target extends UpstreamOrigin {
  service: EdgeServiceName;
  /** The base URL's path, if any (`http://host/base` → `/base`), put before every request path. */
  prefix: string;
}

/** What a failure the gateway answers for says about the upstream, in the metrics. */
const FAILED_AS = { 502: 'error', 503: 'unreachable', 504: 'timeout' } as const;

/** What every proxied request of one gateway needs, made once. */
interface Proxying {
  timeoutMs: number;
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
}: ProxyOptions) {
  const p: Proxying = { timeoutMs, bodyLimit, logger, metrics, trustedProxies };
  const byService = new Map<EdgeServiceName, Target>();
  for (const [service, target] of Object.entries(targets) as [EdgeServiceName, string][]) {
    const url = new URL(target);
    byService.set(service, { ...upstreamOrigin(url, maxSockets), service, prefix: url.pathname.replace(/\/+$/, '') });
  }

  return {
    /**
     * Forwards the request to the service (the route's version rewrite already in `req.url`).
     * Without a body it goes at once; a JSON body is read and checked first; any other streams.
     */
    forward(service: EdgeServiceName, req: IncomingMessage, res: ServerResponse): void {
      const target = byService.get(service);
      if (!target) {
        logger.error({ requestId: requestContextOf(req)?.requestId, service }, 'no upstream configured for the service');
        sendJson(res, 502, { error: 'Bad gateway' });
        return;
      }
      if (!hasBody(req)) return exchange(p, target, req, res, undefined);
      // A compressed body is the service's to decode (and judge); only plain JSON is checked.
      if (isEncoded(req) || !isJsonType(req.headers['content-type'])) {
        const declared = req.headers['content-length'];
        if (declared !== undefined && Number(declared) > bodyLimit) return sendBodyError(res, payloadTooLarge(), logger);
        return exchange(p, target, req, res, null);
      }
      readBody(req, bodyLimit).then(
        (body) => {
          try {
            parseJson(body);
          } catch (err) {
            return sendBodyError(res, err, logger);
          }
          exchange(p, target, req, res, body);
        },
        (err: unknown) => sendBodyError(res, err, logger),
      );
    },
    /** Drops the pooled upstream connections (after the server has drained). */
    close(): void {
      for (const target of byService.values()) target.agent.destroy();
    },
  };
}

export type ServiceProxies = ReturnType<typeof createServiceProxies>;

/**
 * One proxied request. `body`: bytes already read (JSON); null: stream `req`; undefined: none.
 * Long on purpose: the request's listeners share the `done`/`answered` state, and keeping them in
 * one function keeps that state in one closure context (the REST hot path, measured).
 */
function exchange(p: Proxying, target: Target, req: IncomingMessage, res: ServerResponse, body: Buffer | null | undefined): void {
  const { timeoutMs, bodyLimit, logger, metrics } = p;
  const headers = upstreamHeaders(req, p.trustedProxies);
  if (body) {
    headers['content-length'] = String(body.length);
  } else if (body === null && headers['content-length'] === undefined) {
    // The incoming Transfer-Encoding is hop-by-hop; the upstream hop is chunked in its turn
    // (node would not chunk a DELETE or OPTIONS body by default).
    headers['transfer-encoding'] = 'chunked';
  }
  // Set once the gateway has answered (413, 5xx) or the client is gone: upstream events are
  // then ignored (an abort's own error is not a 502).
  let done = false;
  let received = 0;
  // The service's answer head arrived (what the metrics time; a later failure is not counted again).
  let answered = false;
  const sentAt = metrics ? process.hrtime.bigint() : 0n;
  const upstream = target.send({
    hostname: target.hostname,
    port: target.port,
    method: req.method,
    path: target.prefix + (req.url ?? '/'),
    headers,
    agent: target.agent,
    timeout: timeoutMs,
  });

  const fail = (status: 502 | 503 | 504, message: string, code: string | undefined, err?: Error) => {
    if (done) return;
    done = true;
    if (!answered) metrics?.upstream(target.service, FAILED_AS[status], sentAt);
    logger.error(
      { requestId: requestContextOf(req)?.requestId, service: target.service, code, message: err?.message },
      status === 504 ? 'upstream timed out' : 'upstream request failed',
    );
    upstream.destroy();
    if (res.headersSent || res.destroyed) return void res.destroy();
    // A body still streaming in is not read any further: the connection cannot be reused.
    sendJson(res, status, { error: message }, body === null && !req.complete ? CLOSE : undefined);
  };

  upstream.on('timeout', () => fail(504, 'Gateway timeout', 'ETIMEDOUT'));
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    const code = err.code;
    // Nobody listening (a service down or restarting): say so, and fast (docs/api/conventions.md).
    if (code !== undefined && UNREACHABLE.has(code)) fail(503, 'Service unavailable', code, err);
    else fail(502, 'Bad gateway', code, err);
  });
  upstream.on('response', (answer: IncomingMessage) => {
    answered = true;
    metrics?.upstream(target.service, answer.statusCode ?? 502, sentAt);
    if (done || res.destroyed) return void answer.resume();
    relayAnswer(answer, req, res);
  });
  // 'close' without a finished answer: the client left (or the gateway destroyed the answer).
  res.on('close', () => {
    if (res.writableFinished) return;
    done = true;
    upstream.destroy();
  });

  if (body) return void upstream.end(body);
  if (body === undefined) return void upstream.end();
  // A streamed body: counted against the limit, with backpressure both ways.
  req.on('data', (chunk: Buffer) => {
    if (done) return;
    received += chunk.length;
    if (received > bodyLimit) {
      done = true;
      upstream.destroy();
      // The 413 goes out with `Connection: close`; the rest of the body is discarded.
      sendBodyError(res, payloadTooLarge(), logger);
      return;
    }
    if (!upstream.write(chunk)) req.pause();
  });
  upstream.on('drain', () => {
    if (!done) req.resume();
  });
  req.on('end', () => {
    if (!done) upstream.end();
  });
}

/** The service's answer, streamed back with backpressure: its head (./copyResponseHead), then its body. */
function relayAnswer(answer: IncomingMessage, req: IncomingMessage, res: ServerResponse): void {
  copyResponseHead(answer, req, res);
  answer.on('data', (chunk: Buffer) => {
    if (!res.write(chunk)) answer.pause();
  });
  answer.on('end', () => res.end());
  // The service's socket died mid-answer: the client's answer cannot be completed either.
  answer.on('error', () => res.destroy());
  res.on('drain', () => answer.resume());
}
