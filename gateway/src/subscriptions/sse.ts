import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, OperationTypeNode, type FormattedExecutionResult, type GraphQLFormattedError } from 'graphql';
import { createHandler, type ExecutionResult, type Request, type RequestParams, type Response } from 'graphql-sse';
import { isHaloError } from '@halo/kit/errors';
import { requestContextOf, saneRequestId, type Logger, type RequestContext, boundRequestId } from '@halo/kit/logging';
import type { CallerResolver } from '../auth';
import {
  connectionContextOf,
  operationRequestError,
  type ExecuteDeferred,
  type GraphQLContext,
  type OperationRequestText,
} from '../graphql';
import { ClientGoneError, isEncoded, isJsonType, parseJson, readBody } from '../http';
import type { Admitted, SubscribePayload } from './admission';
import { closeConnection, closeWhenExpired, keepApiKeyFresh, resolveConnection, usesApiKey } from './connection';
import { error, formatError, type Connection } from './context';
import { SSE_PLACEHOLDER_CHUNK } from './sharing';
import { ErrorsAsEvents, once } from './sse-results';
import type { UpstreamSubscriptions } from './upstream';

/**
 * GraphQL over Server-Sent Events at `/graphql/stream` (the graphql-sse protocol's "distinct
 * connections mode", the `graphql-sse` library's handler): one request per operation, answered
 * with an event stream of `next` events and a final `complete`.
 *
 * - Credentials are the request's `Authorization` (or `X-API-Key`) header, checked exactly as
 *   WebSocket's `connection_init` and HTTP check them; bad ones are a 401 before any stream, as on
 *   `/graphql`; a token that expires while the stream is open ends it with UNAUTHENTICATED.
 * - The operation is judged by the same code as WebSocket (src/graphql/operation-policy.ts): a
 *   refusal (UNAUTHENTICATED, MAX_DEPTH_LIMIT, …) is one `next` event with `errors`, then `complete`
 *   — what graphql-sse itself does with validation errors, and what a graphql-ws client sees as
 *   an `error` message.
 * - A subscription goes upstream like a WebSocket one (./upstream.ts, entities per event); the
 *   client disconnects → the upstream subscription ends. Queries and mutations run through the
 *   HTTP pipeline (Apollo); a mutation over GET is a 405.
 * - The single-connection mode is off: its reservations live in one process, so with several
 *   gateway replicas the stream and the operations would have to land on the same one.
 * - A comment line every 12 s (graphql-sse's keep-alive) keeps proxies from closing idle streams;
 *   `X-Accel-Buffering: no` stops nginx from buffering them.
 */

export interface StreamOptions {
  callers: CallerResolver;
  /** The same admission as WebSocket: checks, then the rate limits (a refusal is RATE_LIMITED). */
  admit: (connection: Connection, payload: SubscribePayload) => Promise<Admitted>;
  /** The rate-limit partition of a stream's caller (src/ratelimit `keyOf`); undefined: unlimited. */
  limitKeyOf: (req: IncomingMessage, caller: Connection['caller']) => string | undefined;
  upstreams: UpstreamSubscriptions;
  executeOperation: (request: OperationRequestText, context: GraphQLContext) => Promise<FormattedExecutionResult>;
  /** A query with deferred fragments: its parts, one `next` event each (null: nothing deferred). */
  executeDeferred?: ExecuteDeferred;
  bodyLimit: number;
  /** How often an API key's open stream exchanges its key again (./connection.ts `keepApiKeyFresh`). */
  apiKeyRecheckMs: number;
  logger: Logger;
}

/** What one stream request carries through graphql-sse's hooks. */
interface StreamState {
  connection: Connection | null;
  /** The subscription's results, once it is one (shared ones are written from here). */
  events?: ErrorsAsEvents;
}

type StreamRequest = Request<IncomingMessage, StreamState>;

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };
const CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHENTICATED',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  503: 'UNAVAILABLE',
};

/** A refusal before any stream: HTTP status and `{"errors":[…]}`, as `/graphql` answers request errors. */
function refuse(status: number, message: string, headers: Record<string, string> = {}, code = CODES[status] ?? 'BAD_REQUEST'): Response {
  return [
    JSON.stringify({ errors: [{ message, extensions: { code } }] }),
    { status, statusText: '', headers: { ...JSON_HEADERS, ...headers } },
  ];
}

export function createStreamHandler(opts: StreamOptions) {
  const log = opts.logger.child({ component: 'subscriptions', transport: 'sse' });
  /** Open streams, ended at shutdown. */
  const open = new Set<ServerResponse>();
  const handler = createHandler<IncomingMessage, StreamState>({
    // No stream token: every request is its own stream (distinct connections mode only).
    authenticate: () => null,
    onSubscribe: (req, params) => subscribe(opts, log, req, params),
    onComplete: (_ctx, req) => {
      if (req.context.connection) closeConnection(req.context.connection);
    },
  });

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const framing = await readRequest(req, opts.bodyLimit);
    if (framing.refused) return write(res, framing.refused);
    const state: StreamState = { connection: null };
    res.once('close', () => {
      open.delete(res);
      if (state.connection) closeConnection(state.connection);
    });
    const [body, init] = await handler({
      method: req.method!,
      url: req.url!,
      headers: {
        // graphql-sse wants exactly `text/event-stream`; any Accept naming it is a stream request here.
        get: (key) => (key === 'accept' ? 'text/event-stream' : headerOf(req, key)),
      },
      body: framing.body,
      raw: req,
      context: state,
    });
    if (typeof body !== 'object' || body === null) return write(res, [body, init]);
    open.add(res);
    res.writeHead(init.status, { ...init.headers, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    res.once('close', () => void body.return());
    for await (const chunk of body) {
      if (!res.writable) break;
      const shared = chunk === SSE_PLACEHOLDER_CHUNK ? state.events?.shared.shift() : undefined;
      res.write(shared ? shared.sseEvent() : chunk);
    }
    res.end();
  };

  return {
    serve: (req: IncomingMessage, res: ServerResponse): void => {
      serve(req, res).catch((err: unknown) => {
        if (err instanceof ClientGoneError) return;
        log.error({ err, requestId: boundRequestId(req) }, 'event stream failed');
        if (!res.headersSent) write(res, refuse(500, 'Internal server error', {}, 'INTERNAL_SERVER_ERROR'));
        else res.destroy();
      });
    },
    /** Shutdown: every open stream ends (a graphql-sse client reconnects, to another replica). */
    close: (): void => {
      for (const res of open) res.destroy();
      open.clear();
    },
  };
}

/** The method, Accept, Content-Type and body checked before graphql-sse sees the request. */
async function readRequest(req: IncomingMessage, limit: number): Promise<{ refused?: Response; body: Record<string, unknown> | null }> {
  if (req.method !== 'GET' && req.method !== 'POST') {
    return { refused: refuse(405, 'Use GET or POST', { allow: 'GET, POST' }), body: null };
  }
  if (!/\btext\/event-stream\b/i.test(req.headers.accept ?? '')) {
    return { refused: refuse(406, 'Accept must include text/event-stream'), body: null };
  }
  if (req.method === 'GET') return { body: null };
  if (!isJsonType(req.headers['content-type'])) return { refused: refuse(415, 'Content-Type must be application/json'), body: null };
  if (isEncoded(req)) return { refused: refuse(415, 'Unsupported content encoding'), body: null };
  let parsed: unknown;
  try {
    parsed = parseJson(await readBody(req, limit));
  } catch (err) {
    if (err instanceof ClientGoneError) throw err;
    const status = isHaloError(err) ? err.httpStatus : 400;
    return {
      refused: refuse(status, isHaloError(err) ? err.message : 'Invalid JSON', status === 413 ? { connection: 'close' } : {}),
      body: null,
    };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { refused: refuse(400, 'The body must be a JSON object'), body: null };
  }
  return { body: parsed as Record<string, unknown> };
}

/** One operation of a stream: the caller, then the same admission as WebSocket, then upstream. */
async function subscribe(
  opts: StreamOptions,
  log: Logger,
  req: StreamRequest,
  params: RequestParams,
): Promise<Response | AsyncGenerator<ExecutionResult>> {
  const refused = operationRequestError(params);
  if (refused) return [JSON.stringify({ errors: [refused] }), { status: 400, statusText: '', headers: JSON_HEADERS }];
  const raw = req.raw;
  const context: RequestContext = requestContextOf(raw) ?? { requestId: saneRequestId(raw.headers['x-request-id']) };
  const credentials = { authorization: raw.headers.authorization, 'x-api-key': raw.headers['x-api-key'] };
  const connection = await resolveConnection(credentials, raw, context, opts.callers);
  if ('refused' in connection) {
    log.info({ requestId: context.requestId, reason: connection.message }, 'event stream refused');
    return connection.refused === 'unauthorized'
      ? refuse(401, connection.message, { 'www-authenticate': 'Bearer' })
      : refuse(503, 'Service unavailable', { 'retry-after': '1' });
  }
  req.context.connection = connection;
  connection.limitKey = opts.limitKeyOf(raw, connection.caller);
  const admitted = await opts.admit(connection, params);
  if (!('schema' in admitted)) {
    // Over the limits: the HTTP answer a client retries on (429, Retry-After), before any stream opens.
    const limited = admitted.find((e) => e.extensions.code === 'RATE_LIMITED');
    if (limited) {
      const after = Number(limited.extensions.retryAfter);
      return refuse(429, limited.message, { 'retry-after': String(Number.isFinite(after) && after > 0 ? after : 1) }, 'RATE_LIMITED');
    }
    return once({ errors: admitted.map(formatError) });
  }
  const ctx = admitted.contextValue;
  if (ctx.kind === 'operation') {
    const operation = getOperationAST(admitted.document, admitted.operationName);
    if (req.method === 'GET' && operation?.operation === OperationTypeNode.MUTATION) {
      return refuse(405, 'Mutations are not allowed over GET', { allow: 'POST' });
    }
    // Deferred fragments: each part a `next` event, as it is ready.
    const parts = opts.executeDeferred?.(admitted, ctx, connectionContextOf(connection));
    if (parts) return parts as unknown as AsyncGenerator<ExecutionResult>;
    const result = await opts.executeOperation(ctx.request, connectionContextOf(connection));
    return once(result.errors ? { ...result, errors: result.errors.map(formatError) } : result);
  }
  const apiKey = connection.caller !== null && usesApiKey(credentials);
  connection.apiKey = apiKey;
  const channel = opts.upstreams.subscribe(ctx);
  if (apiKey) {
    // The exchanged token is the gateway's to renew; a revoked key ends the stream (./connection.ts).
    keepApiKeyFresh(connection, {
      params: credentials,
      request: raw,
      callers: opts.callers,
      periodMs: opts.apiKeyRecheckMs,
      log,
      renewed: () => opts.upstreams.renewed(connection),
      end: (err) => channel.fail(err),
    });
  } else if (connection.caller && typeof raw.headers.authorization === 'string') {
    // A token the client sent ends the stream when it expires.
    closeWhenExpired(connection, () => channel.fail(error('Token expired', 'UNAUTHENTICATED')));
  }
  return (req.context.events = new ErrorsAsEvents(channel));
}

function headerOf(req: IncomingMessage, key: string): string | undefined {
  const value = req.headers[key];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A graphql-sse answer that is not a stream: its 4xx in the `{"errors":[…]}` shape, with a code. */
function write(res: ServerResponse, [body, init]: Response): void {
  let text = typeof body === 'string' ? body : null;
  if (init.status >= 400) text = JSON.stringify({ errors: withCodes(text, init.status, init.statusText) });
  res.writeHead(init.status, { ...init.headers, ...(text !== null ? JSON_HEADERS : {}) });
  res.end(text ?? undefined);
}

/** graphql-sse's own refusals (`Missing query`, …) carry no code: they get the status's. */
function withCodes(text: string | null, status: number, statusText: string): GraphQLFormattedError[] {
  const code = CODES[status] ?? 'BAD_REQUEST';
  let errors: GraphQLFormattedError[] = [];
  try {
    errors = text ? ((JSON.parse(text) as { errors?: GraphQLFormattedError[] }).errors ?? []) : [];
  } catch {
    errors = [];
  }
  if (errors.length === 0) errors = [{ message: statusText || 'Bad request' }];
  return errors.map((e) => ({ ...e, extensions: { code, ...e.extensions } }));
}
