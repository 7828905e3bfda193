import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { useServer } from 'graphql-ws/use/ws';
import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  OperationTypeNode,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { WebSocketServer } from 'ws';
import type { Logger } from '@halo/kit';
import type { CallerResolver } from '../auth';
import type { GraphQLContext, LoadedSupergraph, OperationPolicy, OperationRequestText } from '../graphql';
import type { RateLimits } from '../ratelimit';
import { closeConnection, openConnection } from './connection';
import { error, formatError, type ClientHeaders, type Connection, type OperationContext, type SubscriptionContext } from './context';
import { DocumentCache } from './documents';
import { EntityResolver } from './entities';
import { SubscriptionPlanner } from './planner';
import { UpstreamSubscriptions } from './upstream';

/**
 * GraphQL over WebSocket at the gateway (`graphql-transport-ws`, the graphql-ws library) on the
 * same port and path as HTTP: `ws://<gateway>/graphql`.
 *
 * - `connection_init` carries the credentials: `{"authorization": "Bearer …"}` (or `x-api-key`),
 *   checked exactly as HTTP checks them. None: an anonymous connection. Bad ones: the socket is
 *   closed with 4401 Unauthorized (graphql-ws clients do not retry that code); a token that
 *   expires while connected closes it the same way, so a subscription never outlives its token.
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
 * No cookie ever authenticates a socket, so a page on another origin gains nothing by opening one
 * (cross-site WebSocket hijacking needs ambient credentials).
 */

export interface SubscriptionOptions {
  server: Server;
  callers: CallerResolver;
  policy: OperationPolicy;
  /** Each subgraph's GraphQL URL as served now (src/supergraph: it follows the compositions). */
  subgraphUrls: Readonly<Record<string, string>>;
  parseOptions: { maxTokens: number };
  validationRules: ValidationRule[];
  /** Queries and mutations over the socket: the HTTP pipeline. */
  executeOperation: (request: OperationRequestText, context: GraphQLContext) => Promise<FormattedExecutionResult>;
  /** Largest message accepted from a client (bytes). */
  maxPayload: number;
  /** Requests and cost per caller (src/ratelimit): each `subscribe` message counts; null: unlimited. */
  rateLimits?: RateLimits | null;
  /** Field usage (src/usage): told of every subscription started, with the client's name. */
  recordUsage?:
    ((schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, headers: ClientHeaders) => void) | undefined;
  logger: Logger;
}

/** What one `subscribe` message becomes: graphql-ws's execution arguments, or the errors to answer. */
type Admitted =
  | readonly GraphQLError[]
  | {
      schema: GraphQLSchema;
      document: DocumentNode;
      operationName: string | undefined;
      variableValues: Record<string, unknown>;
      contextValue: OperationContext | SubscriptionContext;
      /** The operation's estimated cost (what the rate limits spend). */
      cost: number;
    };

export function createSubscriptions(opts: SubscriptionOptions) {
  const { callers, policy, logger } = opts;
  const log = logger.child({ component: 'subscriptions' });
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  const connections = new WeakMap<object, Connection>();
  const documents = new DocumentCache(opts.parseOptions, opts.validationRules);
  const planner = new SubscriptionPlanner(policy, documents);
  const upstreams = new UpstreamSubscriptions(opts.subgraphUrls, new EntityResolver(opts.subgraphUrls, log), log);
  policy.onLoad((loaded) => planner.judge(loaded, upstreams.active, log));
  const admit = async (connection: Connection, payload: SubscribePayload): Promise<Admitted> => {
    const loaded = policy.current();
    if (!loaded) return [error('The gateway is starting', 'UNAVAILABLE')];
    const admitted = admitOperation(loaded, connection, payload, { documents, planner, policy, recordUsage: opts.recordUsage });
    // Counted as HTTP counts a request, and the operation's cost spent, once it passed the checks.
    if ('cost' in admitted && opts.rateLimits && connection.limitKey !== undefined) {
      const refused = await opts.rateLimits.charge(connection.limitKey, connection.caller !== null, admitted.cost);
      if (refused) return [refused];
    }
    return admitted;
  };

  const disposable = useServer<Record<string, unknown>>(
    {
      connectionInitWaitTimeout: 5_000,
      onConnect: async (ctx) => {
        const connection = await openConnection(
          { params: ctx.connectionParams ?? {}, request: ctx.extra.request, socket: ctx.extra.socket },
          callers,
          log,
        );
        if (!connection) return false;
        connection.limitKey = opts.rateLimits?.keyOf(ctx.extra.request, connection.caller);
        connections.set(ctx, connection);
        return true;
      },
      onSubscribe: (ctx, _id, payload) => admit(connections.get(ctx)!, payload),
      // graphql-ws sends formatted results as they are (errors already plain objects).
      subscribe: (args) => upstreams.subscribe(args.contextValue as SubscriptionContext) as unknown as AsyncGenerator<ExecutionResult>,
      execute: async (args) => {
        const { connection, request } = args.contextValue as OperationContext;
        const { caller, authorization, context } = connection;
        return (await opts.executeOperation(request, {
          authorization,
          caller,
          requestId: context.requestId,
        })) as unknown as ExecutionResult;
      },
      onError: (_ctx, _id, _payload, errors) => errors.map(formatError),
      onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(formatError) } : undefined),
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
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
  opts.server.on('upgrade', onUpgrade);

  return {
    /** Open subscriptions (for tests and metrics). */
    activeCount: () => upstreams.active.size,
    /** Closes every socket with 1001 Going away and stops accepting new ones. */
    async close(): Promise<void> {
      opts.server.off('upgrade', onUpgrade);
      await disposable.dispose();
    },
  };
}

interface SubscribePayload {
  query?: unknown;
  operationName?: string | null | undefined;
  variables?: Record<string, unknown> | null | undefined;
}

interface Admission {
  documents: DocumentCache;
  planner: SubscriptionPlanner;
  policy: OperationPolicy;
  recordUsage: SubscriptionOptions['recordUsage'];
}

/**
 * One operation sent over a socket, judged by the same code as HTTP before anything is forwarded:
 * parsed and validated (token and alias caps), its variables coerced, its depth, cost and
 * `@authenticated` fields checked; a subscription is planned too.
 */
function admitOperation(loaded: LoadedSupergraph, connection: Connection, payload: SubscribePayload, a: Admission): Admitted {
  if (typeof payload.query !== 'string' || payload.query === '') return [error('A query is required', 'BAD_REQUEST')];
  const parsed = a.documents.get(loaded, payload.query);
  if (!('kind' in parsed)) return parsed;
  const document = parsed;
  const operationName = payload.operationName ?? undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation) return [error('Unable to identify the operation', 'BAD_REQUEST')];
  const inputs = payload.variables ?? {};
  const coerced = getVariableValues(loaded.apiSchema, operation.variableDefinitions ?? [], inputs);
  if (coerced.errors) return coerced.errors.map((e) => error(e.message, 'BAD_USER_INPUT'));
  let cost: number;
  try {
    cost = a.policy.check(loaded.apiSchema, document, operation, inputs, connection.caller);
  } catch (err) {
    if (err instanceof GraphQLError) return [err];
    throw err;
  }
  const base = { schema: loaded.apiSchema, document, operationName, variableValues: inputs, cost };
  if (operation.operation !== OperationTypeNode.SUBSCRIPTION) {
    return {
      ...base,
      contextValue: { kind: 'operation', connection, request: { query: payload.query, variables: inputs, operationName } },
    };
  }
  try {
    const plan = a.planner.planFor(loaded, document, operation);
    a.recordUsage?.(loaded.apiSchema, document, operation, connection.client);
    return { ...base, contextValue: { kind: 'subscription', connection, plan, variables: inputs, document, operation } };
  } catch (err) {
    if (err instanceof GraphQLError) return [err];
    throw err;
  }
}
