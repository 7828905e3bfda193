import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { useServer } from 'graphql-ws/use/ws';
import type { ExecutionResult, FormattedExecutionResult } from 'graphql';
import { WebSocketServer, type WebSocket } from 'ws';
import type { OriginList } from '@halo/kit/config';
import type { Logger } from '@halo/kit/logging';
import type { CallerResolver } from '../auth';
import {
  connectionContextOf,
  type Documents,
  type ExecuteDeferred,
  type GraphQLContext,
  type OperationPolicy,
  type OperationRequestText,
  type RegisteredOperations,
} from '../graphql';
import type { RateLimits } from '../ratelimit';
import { createAdmission, type Admitted, type UsageRecorder } from './admission';
import { CLOSE_UNAUTHORIZED, closeConnection, keepApiKeyFresh, openConnection, usesApiKey } from './connection';
import { formatError, type Connection, type OperationContext, type SubscriptionContext } from './context';
import { EntityResolver } from './entities';
import { SharedResult, SharingWebSocket } from './sharing';
import { createStreamHandler } from './sse';
import { UpstreamSubscriptions } from './upstream';
import { DirectNext } from './ws-frames';

/**
 * GraphQL over WebSocket at the gateway (`graphql-transport-ws`, the graphql-ws library) on the
 * same port and path as HTTP: `ws://<gateway>/graphql`.
 *
 * - `connection_init` carries the credentials: `{"authorization": "Bearer …"}` (or `x-api-key`),
 *   checked exactly as HTTP checks them. None: an anonymous connection. Bad ones: the socket is
 *   closed with 4401 Unauthorized (graphql-ws clients do not retry that code); a token that
 *   expires while connected closes it the same way, so a subscription never outlives its token.
 *   An API key's token is the gateway's: renewed every API_KEY_RECHECK_MS, and a refused key ends
 *   every subscription with UNAUTHENTICATED, then the socket with 4401 (./connection.ts).
 * - Every operation is parsed, validated and judged by the same code as HTTP (token and alias
 *   caps, depth, cost, `@authenticated`: src/graphql/operation-policy.ts) before anything is forwarded,
 *   then counted by the rate limits as one request spending its cost (src/ratelimit): over a
 *   quota it is answered RATE_LIMITED with `retryAfter` (seconds) in its extensions.
 * - A subscription goes to the subgraph that owns its root field over graphql-ws, with the caller's
 *   credentials and request id in its `connection_init`; fields other subgraphs own are fetched
 *   per event (./plan.ts, ./entities.ts). Queries and mutations sent over the socket run through
 *   the HTTP pipeline (Apollo), plugins included.
 * - The client unsubscribes or goes → the upstream subscription completes. The subgraph goes away
 *   → the client gets an UNAVAILABLE error for each subscription (never a silent hang). A new
 *   supergraph → a subscription whose operation still validates (and passes the limits) stays
 *   open; the others end with SUBSCRIPTION_SCHEMA_RELOAD (subscribe again).
 *   Shutdown → every socket closes with 1001 Going away.
 *
 * The same admission, upstreams and entity fetches serve GraphQL over SSE at `/graphql/stream`
 * (./sse.ts).
 *
 * No cookie ever authenticates a socket, so a page on another origin gains nothing by opening one
 * (cross-site WebSocket hijacking needs ambient credentials). Still, browsers send `Origin` on an
 * upgrade and CORS does not apply to it, so the gateway checks it against the same list as CORS
 * (`CORS_ORIGINS`): an Origin neither listed nor the gateway's own (its host as the client
 * addressed it, `Host`) is refused with 403 before the upgrade. No `Origin` at all (a server, k6,
 * a native app) is allowed: only browsers send it, and they cannot leave it out.
 */

export interface SubscriptionOptions {
  callers: CallerResolver;
  policy: OperationPolicy;
  /** Each subgraph's GraphQL URL as served now (src/supergraph: it follows the compositions). */
  subgraphUrls: Readonly<Record<string, string>>;
  /** The edge's document step, shared with the HTTP paths (graphql/documents.ts). */
  documents: Documents;
  /** Queries and mutations over the socket: the HTTP pipeline. */
  executeOperation: (request: OperationRequestText, context: GraphQLContext) => Promise<FormattedExecutionResult>;
  /** A query with deferred fragments: its parts, one `next` each (null: nothing deferred). */
  executeDeferred?: ExecuteDeferred;
  /** Largest message accepted from a client (bytes). */
  maxPayload: number;
  /** How often an API key's open connection exchanges its key again (./connection.ts `keepApiKeyFresh`). */
  apiKeyRecheckMs: number;
  /** The browser origins allowed to open a socket besides the gateway's own (CORS_ORIGINS). */
  origins: OriginList;
  /** Requests and cost per caller (src/ratelimit): each `subscribe` message counts; null: unlimited. */
  rateLimits?: RateLimits | null;
  /** Field usage (src/usage): told of every subscription started, with the client's name. */
  recordUsage?: UsageRecorder | undefined;
  /** Registered operations (PERSISTED_OPERATIONS audit or enforce): judged at admission as over HTTP. */
  registered?: RegisteredOperations | null;
  logger: Logger;
}

export function createSubscriptions(opts: SubscriptionOptions) {
  const { callers, policy, logger } = opts;
  const log = logger.child({ component: 'subscriptions' });
  const { wss, rawSockets, accept } = socketServer(opts.maxPayload);
  const connections = new WeakMap<object, Connection>();
  const { planner, admit } = createAdmission(opts);
  const upstreams = new UpstreamSubscriptions(opts.subgraphUrls, new EntityResolver(opts.subgraphUrls, log), log);
  policy.onLoad((loaded) => planner.judge(loaded, upstreams.active, log));
  const stream = createStreamHandler({
    callers,
    admit,
    limitKeyOf: (req, caller) => opts.rateLimits?.keyOf(req, caller),
    upstreams,
    executeOperation: opts.executeOperation,
    ...(opts.executeDeferred ? { executeDeferred: opts.executeDeferred } : {}),
    bodyLimit: opts.maxPayload,
    apiKeyRecheckMs: opts.apiKeyRecheckMs,
    logger,
  });

  const disposable = useServer<Record<string, unknown>>(
    {
      connectionInitWaitTimeout: 5_000,
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        const connection = await openConnection({ params, request: ctx.extra.request, socket: ctx.extra.socket }, callers, log);
        if (!connection) return false;
        connection.limitKey = opts.rateLimits?.keyOf(ctx.extra.request, connection.caller);
        connections.set(ctx, connection);
        if (connection.caller && usesApiKey(params)) renewWithKey(connection, params, ctx.extra, upstreams, { ...opts, log });
        return true;
      },
      onSubscribe: async (ctx, id, payload) =>
        directNext(await admit(connections.get(ctx)!, payload), ctx.extra.socket, rawSockets.get(ctx.extra.socket), id),
      // graphql-ws sends formatted results as they are (errors already plain objects).
      subscribe: (args) => upstreams.subscribe(args.contextValue as SubscriptionContext) as unknown as AsyncGenerator<ExecutionResult>,
      execute: async (args) => {
        const operation = args.contextValue as OperationContext;
        const { connection, request } = operation;
        // Deferred fragments: each part a `next` message, as it is ready.
        const parts = opts.executeDeferred?.(args, operation, connectionContextOf(connection));
        if (parts) return parts as unknown as AsyncGenerator<ExecutionResult>;
        return (await opts.executeOperation(request, connectionContextOf(connection))) as unknown as ExecutionResult;
      },
      onError: (_ctx, _id, _payload, errors) => errors.map(formatError),
      onNext: (_ctx, _id, _payload, _args, result) => nextMessage(result),
      onClose: (ctx) => {
        const connection = connections.get(ctx);
        if (connection) closeConnection(connection);
      },
    },
    wss,
  );

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (path !== '/graphql') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (!originAllowed(req, opts.origins)) return void socket.end(ORIGIN_REFUSED);
    accept(req, socket, head);
  };
  let server: Server | null = null;

  return {
    /** Takes the WebSocket upgrades of `server` on `/graphql`. */
    attach(to: Server): void {
      server = to;
      to.on('upgrade', onUpgrade);
    },
    /** `/graphql/stream`: GraphQL over Server-Sent Events (./sse.ts), called by the dispatcher. */
    serveStream: stream.serve,
    /** Open subscriptions, over either transport (for tests and metrics). */
    activeCount: () => upstreams.active.size,
    /** Upstream subscriptions open to the subgraphs: a shared one counts once (docs/adr/0011). */
    upstreamCount: () => upstreams.upstreamCount(),
    /** Closes every socket with 1001 Going away, ends every event stream, and stops accepting new ones. */
    async close(): Promise<void> {
      server?.off('upgrade', onUpgrade);
      stream.close();
      await disposable.dispose();
    },
  };
}

/**
 * An API key's socket: its key exchanged again every period (./connection.ts `keepApiKeyFresh`);
 * refused, every subscription on it ends with the error, then the socket closes with 4401.
 */
function renewWithKey(
  connection: Connection,
  params: Record<string, unknown>,
  extra: { request: IncomingMessage; socket: WebSocket },
  upstreams: UpstreamSubscriptions,
  opts: { callers: CallerResolver; apiKeyRecheckMs: number; log: Logger },
): void {
  connection.apiKey = true;
  keepApiKeyFresh(connection, {
    params,
    request: extra.request,
    callers: opts.callers,
    periodMs: opts.apiKeyRecheckMs,
    log: opts.log,
    renewed: () => upstreams.renewed(connection),
    end: (err) => {
      upstreams.endConnection(connection, err);
      // Once the error frames are out: nothing is left on the socket.
      setTimeout(() => extra.socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized'), 200).unref();
    },
  });
}

/** The WebSocket server, and each client socket's TCP stream for the frames of shared events (./ws-frames.ts). */
function socketServer(maxPayload: number) {
  // Never compressed: the gateway frames shared events itself.
  const wss = new WebSocketServer({ noServer: true, maxPayload, WebSocket: SharingWebSocket, perMessageDeflate: false });
  const rawSockets = new WeakMap<WebSocket, Duplex>();
  const accept = (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      rawSockets.set(ws, socket);
      wss.emit('connection', ws, req);
    });
  return { wss, rawSockets, accept };
}

/** A subscription admitted over WebSocket: its shared events are framed for its socket (./ws-frames.ts). */
function directNext(admitted: Admitted, socket: WebSocket, raw: Duplex | undefined, id: string): Admitted {
  if (raw && 'contextValue' in admitted && admitted.contextValue.kind === 'subscription') {
    admitted.contextValue.direct = new DirectNext(socket, raw, id);
  }
  return admitted;
}

/** A `next` payload: errors formatted; a shared result as it is (formatted, serialised once: ./sharing.ts). */
function nextMessage(result: ExecutionResult): ExecutionResult | undefined {
  if ((result as unknown) instanceof SharedResult) return result;
  return result.errors ? ({ ...result, errors: result.errors.map(formatError) } as unknown as ExecutionResult) : undefined;
}

const ORIGIN_REFUSED_BODY = JSON.stringify({ error: 'Origin not allowed' });
const ORIGIN_REFUSED =
  'HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\n' +
  `Content-Length: ${Buffer.byteLength(ORIGIN_REFUSED_BODY)}\r\n\r\n${ORIGIN_REFUSED_BODY}`;

/** No Origin (not a browser), a listed one, or the gateway's own host as the client addressed it. */
function originAllowed(req: IncomingMessage, origins: OriginList): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || origins.allows(origin)) return true;
  const host = req.headers.host;
  if (host === undefined) return false;
  try {
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false;
  }
}
