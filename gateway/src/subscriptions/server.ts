import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { createClient, type Client } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import WebSocket, { WebSocketServer } from 'ws';
import { isHaloError, runInRequest, saneRequestId, type Caller, type Logger, type RequestContext } from '@halo/kit';
import type { CallerResolver } from '../auth';
import { EventChannel } from './event-channel';
import type { GraphQLContext } from '../graphql';
import type { LoadedSupergraph, OperationPolicy } from '../graphql';
import { planSubscription, readJoinMap, REPRESENTATIONS_VAR, type EntityFetch, type JoinMap, type SubscriptionPlan } from './plan';

/**
 * GraphQL over WebSocket at the gateway (`graphql-transport-ws`, the graphql-ws library) on the
 * same port and path as HTTP: `ws://<gateway>/graphql`.
 *
 * - `connection_init` carries the credentials: `{"authorization": "Bearer …"}` (or `x-api-key`),
 *   checked exactly as HTTP checks them. None: an anonymous connection. Bad ones: the socket is
 *   closed with 4401 Unauthorized (graphql-ws clients do not retry that code); a token that
 *   expires while connected closes it the same way, so a subscription never outlives its token.
 * - Every operation is parsed, validated and judged by the same code as HTTP (token and alias
 *   caps, depth, cost, `@authenticated`: src/operation-policy.ts) before anything is forwarded.
 * - A subscription goes to the subgraph that owns its root field over graphql-ws, with the caller's
 *   credentials and request id in its `connection_init`; fields other subgraphs own are fetched
 *   per event (src/subscription-plan.ts). Queries and mutations sent over the socket run through
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

/** graphql-ws's close codes the gateway uses (the client does not retry 4401). */
export const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_TRY_AGAIN_LATER = 1013;
/** How long an entity fetch's answer serves the other subscribers of the same event. */
const ENTITY_REUSE_MS = 2_000;
/** setTimeout's largest delay; a token living longer is re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The client names a socket gave (its `connection_init` payload, else its upgrade request). */
export interface ClientHeaders {
  apollo: string | undefined;
  halo: string | undefined;
}

interface Connection {
  client: ClientHeaders;
  caller: Caller | null;
  authorization: string | undefined;
  /**
   * The request context of the upgrade: what runs for the socket (the caller's check, queries
   * and mutations through Apollo) runs in it; its id goes in the upstream connection_init and
   * entity fetches, and on the lines logged for the socket's events.
   */
  context: RequestContext;
  upstreams: Map<string, Client>;
  expiry: NodeJS.Timeout | undefined;
}

interface OperationContext {
  kind: 'operation';
  connection: Connection;
  request: { query: string; variables?: Record<string, unknown> | undefined; operationName?: string | undefined };
}

interface SubscriptionContext {
  kind: 'subscription';
  connection: Connection;
  /** Replaced when a new supergraph plans the same subgraph subscription differently (entity fetches). */
  plan: SubscriptionPlan;
  variables: Record<string, unknown>;
  document: DocumentNode;
  operation: OperationDefinitionNode;
}

export interface SubscriptionOptions {
  server: Server;
  callers: CallerResolver;
  policy: OperationPolicy;
  /** Each subgraph's GraphQL URL as served now (src/supergraph: it follows the compositions). */
  subgraphUrls: Readonly<Record<string, string>>;
  parseOptions: { maxTokens: number };
  validationRules: ValidationRule[];
  /** Queries and mutations over the socket: the HTTP pipeline. */
  executeOperation: (request: OperationContext['request'], context: GraphQLContext) => Promise<FormattedExecutionResult>;
  /** Largest message accepted from a client (bytes). */
  maxPayload: number;
  /** Field usage (src/usage): told of every subscription started, with the client's name. */
  recordUsage?: ((schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, headers: ClientHeaders) => void) | undefined;
  logger: Logger;
}

const error = (message: string, code: string, more: Record<string, unknown> = {}) =>
  new GraphQLError(message, { extensions: { code, ...more } });

/** What a client sees of an error: message, locations, path and extensions minus the HTTP status. */
function formatError(err: GraphQLError | GraphQLFormattedError): GraphQLFormattedError {
  const json = err instanceof GraphQLError ? err.toJSON() : err;
  if (!json.extensions) return json;
  const { http: _http, ...extensions } = json.extensions as Record<string, unknown>;
  return { ...json, extensions };
}

/** The `exp` of a verified JWT (ms since the epoch), if it has one. */
function expiryOf(authorization: string | undefined): number | null {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
  const payload = token?.split('.')[1];
  if (!payload) return null;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : null;
  } catch {
    return null;
  }
}

export function createSubscriptions(opts: SubscriptionOptions) {
  const { callers, policy, logger } = opts;
  const log = logger.child({ component: 'subscriptions' });
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayload });
  const connections = new WeakMap<object, Connection>();
  /** Every live subscription, to judge them again on a new supergraph. */
  const active = new Map<EventChannel<FormattedExecutionResult>, SubscriptionContext>();
  /** Entity fetches in flight or just answered (see fetchEntities). */
  const recent = new Map<string, Promise<EntityAnswer>>();
  let joins: { loaded: LoadedSupergraph; join: JoinMap } | null = null;
  const plans = new WeakMap<DocumentNode, Map<string, SubscriptionPlan>>();

  const joinOf = (loaded: LoadedSupergraph) => {
    if (joins?.loaded !== loaded) joins = { loaded, join: readJoinMap(loaded.supergraph) };
    return joins.join;
  };

  const callerDependent = (loaded: LoadedSupergraph) => {
    const { auth } = loaded.policy;
    return { has: (c: string) => auth.fields.has(c) || auth.types.has(c) };
  };

  /**
   * The plan of a live subscription under a new supergraph, or null when it must end: its
   * operation no longer validates, or the subgraph subscription itself would differ (which the
   * open upstream cannot follow). Entity fetches may change: the new plan's are used from the
   * next event on. Judged once per document and operation, however many subscribe with it.
   */
  const replan = (loaded: LoadedSupergraph, ctx: SubscriptionContext, seen: Map<SubscriptionPlan, SubscriptionPlan | null>) => {
    if (seen.has(ctx.plan)) return seen.get(ctx.plan)!;
    let plan: SubscriptionPlan | null = null;
    if (validate(loaded.apiSchema, ctx.document, [...specifiedRules, ...opts.validationRules]).length === 0) {
      try {
        const next = planSubscription(loaded.apiSchema, joinOf(loaded), ctx.document, ctx.operation, callerDependent(loaded));
        if (next.graph === ctx.plan.graph && next.query === ctx.plan.query) plan = next;
      } catch {
        plan = null;
      }
    }
    seen.set(ctx.plan, plan);
    return plan;
  };

  /** Whether one subscriber's operation still passes every check (variables, limits, auth). */
  const stillAllowed = (loaded: LoadedSupergraph, ctx: SubscriptionContext) => {
    if (getVariableValues(loaded.apiSchema, ctx.operation.variableDefinitions ?? [], ctx.variables).errors) return false;
    try {
      policy.check(loaded.apiSchema, ctx.document, ctx.operation, ctx.variables, ctx.connection.caller);
      return true;
    } catch {
      return false;
    }
  };

  // A new supergraph: what still validates stays open (an additive publish ends nothing); the
  // rest ends with SUBSCRIPTION_SCHEMA_RELOAD, and the client subscribes again.
  policy.onLoad((loaded) => {
    const seen = new Map<SubscriptionPlan, SubscriptionPlan | null>();
    let ended = 0;
    for (const [channel, ctx] of active) {
      const plan = replan(loaded, ctx, seen);
      if (plan && stillAllowed(loaded, ctx)) {
        ctx.plan = plan;
        continue;
      }
      ended++;
      channel.fail(error('The graph changed: subscribe again', 'SUBSCRIPTION_SCHEMA_RELOAD'));
    }
    if (active.size + ended > 0) log.info({ kept: active.size, ended }, 'subscriptions judged against the new supergraph');
  });

  const upstreamOf = (connection: Connection, graph: string): Client => {
    let client = connection.upstreams.get(graph);
    if (client) return client;
    const url = opts.subgraphUrls[graph];
    if (!url) throw error(`No subgraph named ${graph}`, 'INTERNAL_SERVER_ERROR');
    client = createClient({
      url: url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: {
        ...(connection.authorization ? { authorization: connection.authorization } : {}),
        'x-request-id': connection.context.requestId,
      },
      // One socket per client connection and subgraph, open while it has subscriptions.
      lazy: true,
      // A subgraph that goes away ends the client's subscriptions with an error; the client
      // decides whether to subscribe again (graphql-ws clients retry by themselves).
      retryAttempts: 0,
      shouldRetry: () => false,
      keepAlive: 10_000,
    });
    connection.upstreams.set(graph, client);
    return client;
  };

  type EntityAnswer = { entities: (Record<string, unknown> | null)[]; errors: GraphQLFormattedError[] };

  /**
   * One `_entities` request per event and selection: the subscribers of one chat get the same
   * event within milliseconds of each other, so the answer is shared by identical requests in
   * flight and kept for `ENTITY_REUSE_MS` after. A part that depends on the caller is fetched
   * with each caller's credentials and shared only by that caller's subscriptions; any other
   * part is fetched without credentials and shared by everyone.
   */
  const fetchEntities = (f: EntityFetch, variables: Record<string, unknown>, connection: Connection): Promise<EntityAnswer> => {
    const body = JSON.stringify({ query: f.query, variables });
    const authorization = f.shared ? undefined : connection.authorization;
    const key = `${f.graph}\n${authorization ?? ''}\n${body}`;
    const known = recent.get(key);
    if (known) return known;
    const url = opts.subgraphUrls[f.graph] ?? '';
    const answer = (async (): Promise<EntityAnswer> => {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': connection.context.requestId,
          ...(authorization ? { authorization } : {}),
        },
        body,
      });
      const json = (await res.json()) as { data?: { _entities?: (Record<string, unknown> | null)[] } | null; errors?: GraphQLFormattedError[] };
      return { entities: json.data?._entities ?? [], errors: json.errors ?? [] };
    })();
    recent.set(key, answer);
    const forget = () => void setTimeout(() => recent.delete(key), ENTITY_REUSE_MS).unref();
    answer.then(forget, () => recent.delete(key));
    return answer;
  };

  /** Fills one event's entity parts from the subgraphs that own them. */
  const resolveEntities = async (event: FormattedExecutionResult, ctx: SubscriptionContext): Promise<FormattedExecutionResult> => {
    const result = event as FormattedExecutionResult;
    if (ctx.plan.fetches.length === 0 || !result.data) return result;
    const errors = [...(result.errors ?? [])] as GraphQLFormattedError[];
    await Promise.all(
      ctx.plan.fetches.map(async (f) => {
        const slots = slotsAt(result.data as Record<string, unknown>, f.path);
        if (slots.length === 0) return;
        const representations = slots.map(({ value }) => {
          const rep: Record<string, unknown> = { __typename: value.__typename ?? f.typeName };
          for (const k of f.keyFields) rep[k] = value[k];
          return rep;
        });
        const variables: Record<string, unknown> = { [REPRESENTATIONS_VAR]: representations };
        for (const name of f.variableNames) variables[name] = ctx.variables[name];
        try {
          const answer = await fetchEntities(f, variables, ctx.connection);
          slots.forEach((slot, i) => (slot.parent[slot.key] = answer.entities[i] ?? null));
          for (const e of answer.errors) {
            const at = typeof e.path?.[1] === 'number' ? slots[e.path[1]]?.path : undefined;
            errors.push({ message: e.message, ...(at ? { path: [...at, ...(e.path?.slice(2) ?? [])] } : {}), ...(e.extensions ? { extensions: e.extensions } : {}) });
          }
        } catch (err) {
          log.error({ requestId: ctx.connection.context.requestId, subgraph: f.graph, message: (err as Error).message }, 'entity fetch for a subscription event failed');
          for (const slot of slots) {
            slot.parent[slot.key] = null;
            errors.push({ message: 'Service unavailable', path: slot.path, extensions: { code: 'UNAVAILABLE' } });
          }
        }
      }),
    );
    return errors.length > 0 ? { ...result, errors } : result;
  };

  const subscribe = (ctx: SubscriptionContext): EventChannel<FormattedExecutionResult> => {
    const upstream = upstreamOf(ctx.connection, ctx.plan.graph).iterate({
      query: ctx.plan.query,
      variables: ctx.variables,
      ...(ctx.plan.operationName ? { operationName: ctx.plan.operationName } : {}),
    });
    const channel: EventChannel<FormattedExecutionResult> = new EventChannel(() => {
      active.delete(channel);
      void upstream.return?.();
    });
    active.set(channel, ctx);
    void (async () => {
      try {
        // One event at a time, so the client gets them in the order the subgraph sent them.
        for await (const event of upstream) {
          if (channel.closed) return;
          channel.push(await resolveEntities(event as FormattedExecutionResult, ctx));
        }
        channel.end();
      } catch (err) {
        channel.fail(upstreamFailure(err, ctx));
      }
    })();
    return channel;
  };

  const upstreamFailure = (err: unknown, ctx: SubscriptionContext): GraphQLError => {
    // The subgraph answered with GraphQL errors: the client gets the first, code included.
    if (Array.isArray(err) && err.length > 0 && typeof err[0]?.message === 'string') {
      const first = err[0] as GraphQLFormattedError;
      return new GraphQLError(first.message, { extensions: first.extensions ?? {} });
    }
    const code = (err as { code?: unknown }).code;
    log.warn({ requestId: ctx.connection.context.requestId, subgraph: ctx.plan.graph, code, message: (err as { reason?: string; message?: string }).reason ?? (err as Error).message }, 'upstream subscription ended');
    return error('Service unavailable', 'UNAVAILABLE');
  };

  const planFor = (loaded: LoadedSupergraph, document: DocumentNode, operation: OperationDefinitionNode): SubscriptionPlan => {
    let byName = plans.get(document);
    if (!byName) plans.set(document, (byName = new Map()));
    const name = operation.name?.value ?? '';
    const known = byName.get(name);
    if (known) return known;
    const plan = planSubscription(loaded.apiSchema, joinOf(loaded), document, operation, callerDependent(loaded));
    byName.set(name, plan);
    return plan;
  };

  /** Parsed documents by text, per API schema (a client re-sends the same few). */
  const documents = new WeakMap<object, Map<string, DocumentNode>>();
  const MAX_DOCUMENTS = 1000;
  const documentFor = (loaded: LoadedSupergraph, query: string): DocumentNode | readonly GraphQLError[] => {
    let cache = documents.get(loaded.apiSchema);
    if (!cache) documents.set(loaded.apiSchema, (cache = new Map()));
    const known = cache.get(query);
    if (known) return known;
    let document: DocumentNode;
    try {
      document = parse(query, opts.parseOptions);
    } catch (err) {
      return [error((err as Error).message, 'GRAPHQL_PARSE_FAILED')];
    }
    const errors = validate(loaded.apiSchema, document, [...specifiedRules, ...opts.validationRules]);
    if (errors.length > 0) {
      return errors.map((e) => {
        const own = e.extensions.code;
        return new GraphQLError(e.message, { nodes: e.nodes ?? null, extensions: { ...e.extensions, code: typeof own === 'string' ? own : 'GRAPHQL_VALIDATION_FAILED' } });
      });
    }
    if (cache.size >= MAX_DOCUMENTS) cache.clear();
    cache.set(query, document);
    return document;
  };

  const disposable = useServer<Record<string, unknown>>(
    {
      connectionInitWaitTimeout: 5_000,
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        const authorization = params.authorization ?? params.Authorization;
        const apiKey = params['x-api-key'];
        const headers: Record<string, string> = {};
        if (typeof authorization === 'string') headers.authorization = authorization;
        if (typeof apiKey === 'string') headers['x-api-key'] = apiKey;
        const given = params['x-request-id'] ?? ctx.extra.request.headers['x-request-id'];
        const context: RequestContext = { requestId: saneRequestId(given) };
        const req = { headers } as IncomingMessage;
        let caller: Caller | null;
        try {
          caller = await runInRequest(context, () => callers.resolve(req));
        } catch (err) {
          const refused = isHaloError(err) && err.httpStatus === 401;
          log.info({ requestId: context.requestId, reason: isHaloError(err) ? err.message : 'error' }, 'websocket connection refused');
          ctx.extra.socket.close(refused ? CLOSE_UNAUTHORIZED : CLOSE_TRY_AGAIN_LATER, refused ? 'Unauthorized' : 'Service unavailable');
          return false;
        }
        const named = (key: string) => {
          const v = params[key] ?? ctx.extra.request.headers[key];
          return typeof v === 'string' ? v : undefined;
        };
        const client = { apollo: named('apollographql-client-name'), halo: named('x-client-name') };
        const connection: Connection = { client, caller, authorization: req.headers.authorization, context, upstreams: new Map(), expiry: undefined };
        // A token the client sent lives as long as it does; an API key's exchanged token is not
        // the client's to refresh, so an API-key connection stays until it closes.
        const expires = caller && typeof authorization === 'string' ? expiryOf(connection.authorization) : null;
        if (expires !== null) {
          const arm = () => {
            const wait = expires - Date.now();
            connection.expiry = setTimeout(() => {
              if (Date.now() < expires) return arm();
              ctx.extra.socket.close(CLOSE_UNAUTHORIZED, 'Token expired');
            }, Math.max(0, Math.min(wait, MAX_TIMER_MS)));
            connection.expiry.unref();
          };
          arm();
        }
        connections.set(ctx, connection);
        return true;
      },
      onSubscribe: (ctx, _id, payload) => {
        const connection = connections.get(ctx)!;
        const loaded = policy.current();
        if (!loaded) return [error('The gateway is starting', 'UNAVAILABLE')];
        if (typeof payload.query !== 'string' || payload.query === '') return [error('A query is required', 'BAD_REQUEST')];
        const parsed = documentFor(loaded, payload.query);
        if (!('kind' in parsed)) return parsed;
        const document = parsed;
        const operationName = payload.operationName ?? undefined;
        const operation = getOperationAST(document, operationName);
        if (!operation) return [error('Unable to identify the operation', 'BAD_REQUEST')];
        const inputs = (payload.variables ?? {}) as Record<string, unknown>;
        const coerced = getVariableValues(loaded.apiSchema, operation.variableDefinitions ?? [], inputs);
        if (coerced.errors) return coerced.errors.map((e) => error(e.message, 'BAD_USER_INPUT'));
        try {
          policy.check(loaded.apiSchema, document, operation, inputs, connection.caller);
        } catch (err) {
          if (err instanceof GraphQLError) return [err];
          throw err;
        }
        const base = { schema: loaded.apiSchema, document, operationName, variableValues: inputs };
        if (operation.operation !== 'subscription') {
          const context: OperationContext = { kind: 'operation', connection, request: { query: payload.query, variables: inputs, operationName } };
          return { ...base, contextValue: context };
        }
        try {
          const plan = planFor(loaded, document, operation);
          const context: SubscriptionContext = { kind: 'subscription', connection, plan, variables: inputs, document, operation };
          opts.recordUsage?.(loaded.apiSchema, document, operation, connection.client);
          return { ...base, contextValue: context };
        } catch (err) {
          if (err instanceof GraphQLError) return [err];
          throw err;
        }
      },
      // graphql-ws sends formatted results as they are (errors already plain objects).
      subscribe: (args) => subscribe(args.contextValue as SubscriptionContext) as unknown as AsyncGenerator<ExecutionResult>,
      execute: async (args) => {
        const ctx = args.contextValue as OperationContext;
        const { caller, authorization, context } = ctx.connection;
        return (await runInRequest(context, opts.executeOperation, ctx.request, { authorization, caller })) as unknown as ExecutionResult;
      },
      onError: (_ctx, _id, _payload, errors) => errors.map(formatError),
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors ? { ...result, errors: result.errors.map(formatError) } : undefined,
      onClose: (ctx) => {
        const connection = connections.get(ctx);
        if (!connection) return;
        clearTimeout(connection.expiry);
        for (const client of connection.upstreams.values()) void client.dispose();
        connection.upstreams.clear();
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
    activeCount: () => active.size,
    /** Closes every socket with 1001 Going away and stops accepting new ones. */
    async close(): Promise<void> {
      opts.server.off('upgrade', onUpgrade);
      await disposable.dispose();
    },
  };
}

interface Slot {
  parent: Record<string | number, unknown>;
  key: string | number;
  value: Record<string, unknown>;
  path: (string | number)[];
}

/** The objects at `path` under `data` (through lists, skipping nulls), with where each sits. */
function slotsAt(data: Record<string, unknown>, path: string[]): Slot[] {
  const slots: Slot[] = [];
  const walk = (holder: Record<string, unknown>, depth: number, at: (string | number)[]) => {
    const key = path[depth]!;
    const place = (value: unknown, parent: Record<string | number, unknown>, k: string | number, p: (string | number)[]): void => {
      if (Array.isArray(value)) return value.forEach((item, i) => place(item, value as unknown as Record<number, unknown>, i, [...p, i]));
      if (!value || typeof value !== 'object') return;
      if (depth === path.length - 1) slots.push({ parent, key: k, value: value as Record<string, unknown>, path: p });
      else walk(value as Record<string, unknown>, depth + 1, p);
    };
    place(holder[key], holder, key, [...at, key]);
  };
  walk(data, 0, []);
  return slots;
}
