import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  execute,
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  parse,
  subscribe,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import { CloseCode } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { isHaloError } from '../errors/errors';
import { formatGraphQLError } from './graphql';
import { callerFromHeader, tokenExpiresAt, type Caller } from '../auth/jwt';
import type { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import type { ServiceMetrics } from '../metrics/metrics';
import { runInRequest } from '../logging/request-context';
import { REQUEST_ID_HEADER, saneRequestId } from '../logging/request-id';

/** Where a subgraph serves GraphQL over WebSocket: the same path as over HTTP. */
export const SUBSCRIPTIONS_PATH = '/graphql';
/** RFC 6455's "going away": the server shuts down (the client may reconnect to another replica). */
export const CLOSE_GOING_AWAY = 1001;
/** graphql-ws's close code for a connection whose token is invalid or has expired. */
export const CLOSE_UNAUTHORIZED = CloseCode.Unauthorized;
/** The gauge of open subscriptions (operations, not sockets) on this process. */
export const SUBSCRIPTIONS_GAUGE = 'halo_graphql_subscriptions';

/** How long shutdown waits for a client to answer its close frame before cutting the socket. */
const CLOSE_GRACE_MS = 2_000;
/** setTimeout's largest delay; a later expiry is re-armed when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What `connection_init` established for one socket; every operation on it runs as this caller. */
interface Connection {
  caller: Caller | null;
  requestId: string;
  expiry?: NodeJS.Timeout;
}

export interface SubscriptionServerOptions {
  /** The service's HTTP server: its `upgrade` requests for `/graphql` become WebSockets. */
  server: Server;
  schema: GraphQLSchema;
  /** Verifies `connection_init`'s `authorization` exactly like the HTTP `Authorization` header. */
  jwtSecret: string | undefined;
  logger: Logger;
  lifecycle: Lifecycle;
  metrics?: ServiceMetrics | undefined;
  /** Largest accepted WebSocket message (the service's BODY_LIMIT). */
  maxPayload: number;
  /** Added to `{ requestId, caller }` for each operation, given the upgrade request (like HTTP's per request). */
  context?: ((req: IncomingMessage) => object) | undefined;
}

/**
 * GraphQL over WebSocket for a subgraph with a Subscription type: the `graphql-transport-ws`
 * protocol (graphql-ws) at `/graphql` on the service's own HTTP server; any other upgrade is cut.
 *
 * - `connection_init` carries `{ authorization: "Bearer …", "x-request-id"? }`. No authorization:
 *   an anonymous connection. An invalid or expired token: closed with 4401 `Unauthorized`, and a
 *   connection whose token expires later is closed the same way then.
 * - Each operation runs with the context HTTP resolvers see (`requestId`, `caller`, the service's
 *   own), inside the request context, so its log lines carry the request id.
 * - A subscription is established (its source stream created, e.g. subscribed in Redis) before
 *   anything is sent, so a refusal — a resolver's 401, 400 or 503 — is a graphql-ws `error`
 *   message with the kit's codes, never a silent stream.
 * - Errors are formatted like HTTP's (HaloErrors keep their message and code, anything else is
 *   logged and answered `Internal server error`).
 * - `halo_graphql_subscriptions` counts open subscriptions; shutdown (registered on the lifecycle
 *   after the HTTP server, so it runs first) closes every socket with 1001 `Going away`.
 */
// eslint-disable-next-line max-lines-per-function -- graphql-ws's options are one literal of hooks sharing this server's state
export function serveSubscriptions(opts: SubscriptionServerOptions): { close(): Promise<void> } {
  const { schema, logger, lifecycle } = opts;
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  const open = opts.metrics?.gauge(SUBSCRIPTIONS_GAUGE, 'GraphQL subscriptions open on this process', []);
  const format = formatGraphQLError(logger);
  const formatAll = (errors: readonly GraphQLError[]) => errors.map((e) => format(e.toJSON(), e));
  // Streams created in onSubscribe, handed to graphql-ws when it asks `subscribe` for them.
  const streams = new WeakMap<ExecutionArgs, Stream>();

  useServer<Record<string, unknown>, { connection: Connection }>(
    {
      schema,
      // Never put an internal error's message in a close reason.
      isProd: true,
      onConnect: (ctx) => {
        const params = ctx.connectionParams ?? {};
        const raw = params.authorization ?? params.Authorization;
        let caller: Caller | null;
        try {
          if (raw !== undefined && raw !== null && typeof raw !== 'string') throw new TypeError('authorization must be a string');
          caller = callerFromHeader(raw ?? undefined, opts.jwtSecret);
        } catch (err) {
          if (!isHaloError(err) && !(err instanceof TypeError)) throw err;
          // Closed here with the code clients act on; graphql-ws's own 4403 for `false` is then a no-op.
          ctx.extra.socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
          return false;
        }
        const requestId = saneRequestId(params[REQUEST_ID_HEADER] ?? ctx.extra.request.headers[REQUEST_ID_HEADER]);
        const connection: Connection = { caller, requestId };
        const expiresAt = caller ? tokenExpiresAt(raw ?? undefined) : null;
        if (expiresAt !== null) armExpiry(connection, ctx.extra.socket, expiresAt);
        ctx.extra.connection = connection;
        logger.debug({ requestId, anonymous: caller === null }, 'websocket connected');
        return true;
      },
      onClose: (ctx, code) => {
        const connection = ctx.extra.connection;
        if (connection?.expiry) clearTimeout(connection.expiry);
        logger.debug({ requestId: connection?.requestId, code }, 'websocket closed');
      },
      onSubscribe: async (ctx, id, payload) => {
        // graphql-ws refuses `subscribe` before the connection is acknowledged, so this is set.
        const { caller, requestId } = ctx.extra.connection!;
        let document: DocumentNode;
        try {
          document = parse(payload.query);
        } catch (err) {
          return [err instanceof GraphQLError ? err : new GraphQLError('Syntax error', { originalError: err as Error })];
        }
        const invalid = validate(schema, document);
        if (invalid.length > 0) return invalid;
        const operation = getOperationAST(document, payload.operationName);
        if (!operation) return [new GraphQLError('Unable to identify operation')];
        const args: ExecutionArgs = {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: { requestId, caller, ...opts.context?.(ctx.extra.request) },
        };
        if (operation.operation !== OperationTypeNode.SUBSCRIPTION) return args;
        let result: AsyncGenerator<ExecutionResult> | ExecutionResult;
        try {
          result = await runInRequest({ requestId }, () => subscribe(args));
        } catch (err) {
          return [new GraphQLError('Subscription failed', { originalError: err as Error })];
        }
        if (!(Symbol.asyncIterator in result)) return result.errors?.length ? result.errors : [new GraphQLError('Subscription failed')];
        const started = Date.now();
        open?.inc();
        logger.info({ requestId, subscription: id, operationName: payload.operationName ?? undefined }, 'subscription started');
        streams.set(
          args,
          tracked(result, requestId, () => {
            open?.dec();
            logger.info({ requestId, subscription: id, ms: Date.now() - started }, 'subscription ended');
          }),
        );
        return args;
      },
      subscribe: (args) => streams.get(args) ?? subscribe(args),
      execute: (args) => runInRequest({ requestId: (args.contextValue as { requestId: string }).requestId }, () => execute(args)),
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: formatAll(result.errors) } : undefined),
      onError: (_ctx, _id, _payload, errors) => formatAll(errors),
    },
    wss,
  );

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = req.url?.split('?')[0];
    if (path !== SUBSCRIPTIONS_PATH || !lifecycle.accepting) return void socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
  opts.server.on('upgrade', onUpgrade);

  const close = async () => {
    opts.server.off('upgrade', onUpgrade);
    await Promise.all([...wss.clients].map((ws) => goAway(ws)));
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
  lifecycle.register('websockets', close);
  return { close };
}

/** Closes the socket with 4401 once its token has expired (as HTTP would refuse it from then on). */
function armExpiry(connection: Connection, socket: WebSocket, expiresAt: number): void {
  const wait = expiresAt - Date.now();
  if (wait <= 0) return void socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized');
  connection.expiry = setTimeout(() => armExpiry(connection, socket, expiresAt), Math.min(wait, MAX_TIMER_MS));
  connection.expiry.unref();
}

/** 1001 `Going away`, and the socket cut if the client does not answer the close in time. */
function goAway(ws: WebSocket): Promise<void> {
  if (ws.readyState === ws.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const cut = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
    cut.unref();
    ws.once('close', () => {
      clearTimeout(cut);
      resolve();
    });
    ws.close(CLOSE_GOING_AWAY, 'Going away');
  });
}

/** An event stream graphql-ws can end (it calls `return` when the client completes or leaves). */
interface Stream extends AsyncIterableIterator<ExecutionResult> {
  return(value?: unknown): Promise<IteratorResult<ExecutionResult>>;
  throw(err?: unknown): Promise<IteratorResult<ExecutionResult>>;
}

/**
 * The subscription's stream as graphql-ws iterates it: each event is executed inside the
 * request context (log lines carry the request id), and `onEnd` runs once, however it ends —
 * the client completes it, the socket closes, the stream ends or fails.
 */
function tracked(source: AsyncGenerator<ExecutionResult>, requestId: string, onEnd: () => void): Stream {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const stream: Stream = {
    next: () =>
      runInRequest({ requestId }, () => source.next()).then(
        (step) => {
          if (step.done) end();
          return step;
        },
        (err: unknown) => {
          end();
          throw err;
        },
      ),
    return: (value) => {
      end();
      return source.return(value);
    },
    throw: (err) => {
      end();
      return source.throw(err);
    },
    [Symbol.asyncIterator]: () => stream,
  };
  return stream;
}
