import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FormattedExecutionResult } from 'graphql';
import { ApolloGateway, type SupergraphSdlHook } from '@apollo/gateway';
import { ApolloServer, type ApolloServerPlugin, type PersistedQueryOptions } from '@apollo/server';
import {
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { Logger } from '@halo/kit/logging';
import type { CallerResolver } from '../auth';
import type { GraphQLContext, OperationRequestText } from './context';
import { dedupingFetcher, type DedupingFetcher } from './dedupe';
import { handleGraphQLRequest, type HttpGraphQL } from './http';
import { withDeferDirective } from './defer';
import { DirectPlans } from './direct';
import { Documents } from './documents';
import type { OperationObserver } from '../observability';
import { deferredOverSockets, leanGraphQL, type LeanAnswer, type LeanGraphQLOptions } from './lean';
import { OperationPolicy } from './operation-policy';
import type { RateLimits } from '../ratelimit';
import { RedisResponseTier, ResponseCache, responseCachePlugin, ResponseCacheStore } from './response-cache';
import type { RegisteredOperations } from './registered';
import { operationChoicePlugin } from './request-checks';
import { aliasLimitRule, formatGatewayError, noIntrospectionRule } from './rules';
import { createHttpFetcher, type HttpFetcher } from './http-fetcher';
import { SubgraphDataSource } from './subgraph';

/** The limits every operation is held to (README "GraphQL at the edge"). */
export interface GraphQLLimits {
  maxDepth: number;
  maxCost: number;
  defaultListSize: number;
  maxAliases: number;
  maxTokens: number;
  maxBatch: number;
}

export interface GraphQLOptions {
  callers: CallerResolver;
  /** Where the supergraph comes from, and its updates (src/supergraph). */
  supergraph: SupergraphSdlHook;
  /** A subgraph's GraphQL URL from its name and the URL composed into the supergraph. */
  subgraphUrl: (name: string, composedUrl: string | undefined) => string;
  bodyLimit: number;
  logger: Logger;
  limits: GraphQLLimits;
  /** Off: `__schema` and `__type` are refused with 400 `INTROSPECTION_DISABLED` (GRAPHQL_INTROSPECTION). */
  introspection?: boolean;
  persistedQueries: {
    /** Where APQ registrations live (Redis); default: in this process. */
    cache?: NonNullable<PersistedQueryOptions['cache']>;
    ttlSeconds: number;
  };
  /**
   * Registered operations (PERSISTED_OPERATIONS audit or enforce: the registry's lists and the
   * trusted documents file), judged on every transport before anything runs; null when off.
   */
  registered?: RegisteredOperations | null;
  queryPlanCacheMiB: number;
  /**
   * Identical subgraph fetches of read-only operations share one request while it is in flight
   * (`GRAPHQL_DEDUPE_INFLIGHT`, default on).
   */
  dedupeInflight?: boolean;
  /**
   * Memory for the edge response cache of anonymous public queries, in MiB
   * (`GRAPHQL_RESPONSE_CACHE_MIB`); 0 or unset: no cache.
   */
  responseCacheMiB?: number;
  /** The response cache's tier shared by every replica (Redis); default: this process only. */
  sharedResponseCache?: RedisResponseTier;
  /** Requests and estimated cost per caller (src/ratelimit); null or unset: unlimited. */
  rateLimits?: RateLimits | null;
  /** More Apollo Server plugins, first in line (the gateway's metrics: src/observability). */
  plugins?: ApolloServerPlugin<GraphQLContext>[];
  /**
   * What those plugins observe of an answered operation, called by the lean path (their Apollo
   * hooks call the same functions): the metrics, the usage.
   */
  observers?: OperationObserver[];
  /** The lean path for plain POST operations (ADR 0016, `GRAPHQL_LEAN`, default on). */
  lean?: boolean;
  /** Told, for each POST operation offered to the lean path, who answered it (metrics). */
  leanAnswered?: (by: LeanAnswer | 'apollo') => void;
}

/**
 * Federated GraphQL with @apollo/gateway behind @apollo/server, served straight from node:http
 * (no express): `handle` turns the request into Apollo's HTTPGraphQLRequest and writes back its
 * HTTPGraphQLResponse (./http.ts).
 */
export function createGraphQL(opts: GraphQLOptions) {
  const { limits, logger } = opts;
  const policy = new OperationPolicy(limits, logger);
  // Halo sends nothing to Apollo's servers (no telemetry, no reporting); read by the gateway's constructor.
  process.env.APOLLO_TELEMETRY_DISABLED ??= 'true';
  // This gateway's keep-alive pools to the subgraphs, closed when it stops.
  const fetcher = createHttpFetcher();
  // One in-flight table for every subgraph (the URL is part of the key).
  const dedupe = (opts.dedupeInflight ?? true) ? dedupingFetcher(fetcher) : null;
  // The operations one subgraph answers whole (ADR 0019), learnt from the plans the executor resolves.
  const direct = new DirectPlans();
  policy.onLoad(direct.loaded);
  const gateway = apolloGateway(opts, fetcher, dedupe, direct);
  // The logger Apollo Server hands the gateway's executor (the lean path hands it the same one).
  const apolloLogger = logger.child({ component: 'apollo' });
  const validationRules = [aliasLimitRule(limits.maxAliases), ...(opts.introspection === false ? [noIntrospectionRule] : [])];
  // The document step of the lean path, WebSocket and SSE (Apollo Server's path keeps its own).
  const documents = new Documents({ maxTokens: limits.maxTokens }, validationRules);
  const responseCache = opts.responseCacheMiB
    ? new ResponseCache(new ResponseCacheStore(opts.responseCacheMiB * 1024 * 1024), opts.sharedResponseCache)
    : null;
  const server = apolloServer(opts, apolloLogger, gateway, validationRules, edgePlugins(opts, policy, responseCache));
  const executorOptions: LeanGraphQLOptions = {
    gateway,
    policy,
    callers: opts.callers,
    spend: spendCost(opts.rateLimits ?? null),
    documents,
    formatError: formatGatewayError(logger),
    observers: opts.observers ?? [],
    responseCache,
    logger: apolloLogger,
    direct,
  };
  const lean = (opts.lean ?? true) ? leanGraphQL(executorOptions) : null;
  const executeDeferred = deferredOverSockets(executorOptions);
  const http: HttpGraphQL = {
    registered: opts.registered ?? null,
    lean,
    leanAnswered: opts.leanAnswered,
    server,
    callers: opts.callers,
    rateLimits: opts.rateLimits ?? null,
    bodyLimit: opts.bodyLimit,
    maxBatch: limits.maxBatch,
    logger,
  };
  const state = { started: false, startedOnce: false };

  return {
    start: () => startApollo(server, state),
    /** Ready once the supergraph is loaded and Apollo has started, until it stops. */
    isReady: () => state.started,
    /** In-flight deduplication of subgraph fetches (null when switched off): counters. */
    dedupe: dedupe && { inFlight: dedupe.inFlight, waiting: dedupe.waiting, shared: dedupe.shared },
    /** The edge response cache (null when off): entries and bytes held, lookups that hit and missed. */
    responseCache: responseCache && {
      entries: () => responseCache.store.size,
      bytes: () => responseCache.store.usedBytes,
      hits: () => responseCache.store.hits,
      misses: () => responseCache.store.misses,
    },
    /** A query or mutation that came another way (a WebSocket), through the same pipeline and plugins. */
    executeOperation: (request: OperationRequestText, contextValue: GraphQLContext) => executeOperation(server, request, contextValue),
    /** A query with deferred fragments that came another way (admitted there): its parts, one `next` each; null: none deferred. */
    executeDeferred,
    /** The checks every operation passes, and the supergraph loaded last (for subscriptions). */
    policy,
    /** Parsing and validation exactly as HTTP operations get them (token cap, alias cap), kept once for every path. */
    documents,
    /** Registered operations (null when off): sockets and streams judge their operations by them too. */
    registered: opts.registered ?? null,
    /** One HTTP request to /graphql, run inside its request context. */
    handle(req: IncomingMessage, res: ServerResponse): void {
      handleGraphQLRequest(http, req, res);
    },
    stop: () => stopApollo(server, gateway, fetcher, state),
  };
}

export type GraphQLHandler = ReturnType<typeof createGraphQL>;
export type { GraphQLContext, OperationRequestText };

/**
 * Apollo started (`started`: the supergraph loaded; false again once stopping begins). Apollo
 * refuses `stop()` unless `start()` succeeded; a failed start has cleaned up already.
 */
interface ApolloState {
  started: boolean;
  startedOnce: boolean;
}

async function startApollo(server: ApolloServer<GraphQLContext>, state: ApolloState): Promise<void> {
  await server.start();
  state.started = state.startedOnce = true;
}

async function stopApollo(
  server: ApolloServer<GraphQLContext>,
  gateway: ApolloGateway,
  fetcher: HttpFetcher,
  state: ApolloState,
): Promise<void> {
  state.started = false;
  if (state.startedOnce) {
    // Apollo stops the gateway too (which unwatches the file); the second stop is a no-op guard.
    await server.stop();
    await gateway.stop();
  }
  // Once no operation runs: no keep-alive socket to a subgraph outlives the gateway.
  await fetcher.close();
}

async function executeOperation(
  server: ApolloServer<GraphQLContext>,
  request: OperationRequestText,
  contextValue: GraphQLContext,
): Promise<FormattedExecutionResult> {
  const response = await server.executeOperation(request, { contextValue });
  if (response.body.kind === 'single') return response.body.singleResult;
  return { errors: [{ message: 'Incremental delivery is not supported here', extensions: { code: 'BAD_REQUEST' } }] };
}

/** The query planner over the supergraph, one SubgraphDataSource per subgraph. */
function apolloGateway(opts: GraphQLOptions, fetcher: HttpFetcher, dedupe: DedupingFetcher | null, direct: DirectPlans): ApolloGateway {
  const { logger } = opts;
  return new ApolloGateway({
    // The gateway's policy (@authenticated, @cost, @listSize) is read from each loaded supergraph
    // by OperationPolicy; the source hands over SDL that only lost what @apollo/gateway would refuse.
    supergraphSdl: opts.supergraph,
    logger: logger.child({ component: 'apollo' }),
    // An explicit `<SERVICE>_URL` wins over the URL the service published (src/supergraph), so
    // it moves REST and GraphQL together.
    buildService: ({ name, url }) => new SubgraphDataSource(name, opts.subgraphUrl(name, url), logger, fetcher, dedupe?.fetcher),
    experimental_approximateQueryPlanStoreMiB: opts.queryPlanCacheMiB,
    experimental_didResolveQueryPlan: direct.resolved,
  });
}

type GatewayInterface = NonNullable<ConstructorParameters<typeof ApolloServer<GraphQLContext>>[0]['gateway']>;

/**
 * The gateway as Apollo Server sees it, with `@defer` declared in the API schema it serves (and
 * every transport validates against): @apollo/gateway leaves it out although its planner reads it.
 * A client that takes parts gets them (./lean.ts); any other gets the whole answer in one. The
 * gateway's own `schema` (introspection is answered from it) becomes the same schema.
 */
function deferCapable(gateway: ApolloGateway): GatewayInterface {
  return {
    load: (options) => gateway.load(options),
    onSchemaLoadOrUpdate: (callback) =>
      gateway.onSchemaLoadOrUpdate(({ apiSchema, coreSupergraphSdl }) => {
        const withDefer = withDeferDirective(apiSchema);
        // The executor validates variables and answers introspection from its own `schema`: the same one.
        if (gateway.schema === apiSchema) gateway.schema = withDefer;
        callback({ apiSchema: withDefer, coreSupergraphSdl });
      }),
    stop: () => gateway.stop(),
  };
}

/** An operation's estimated cost, spent from its caller's budget (HTTP requests carry a ticket; WebSockets none yet). */
function spendCost(rateLimits: RateLimits | null) {
  if (!rateLimits) return undefined;
  return async (cost: number, context: GraphQLContext) => {
    if (context.limit) await rateLimits.spend(context.limit, cost);
  };
}

/** The edge's own plugins, in order, after the ones the options bring (metrics, usage). */
function edgePlugins(
  opts: GraphQLOptions,
  policy: OperationPolicy,
  responseCache: ResponseCache | null,
): ApolloServerPlugin<GraphQLContext>[] {
  return [
    ...(opts.plugins ?? []),
    ApolloServerPluginUsageReportingDisabled(),
    ApolloServerPluginSchemaReportingDisabled(),
    // Apollo's landing page loads Apollo Sandbox from a CDN; development gets GraphiQL (src/docs).
    ApolloServerPluginLandingPageDisabled(),
    operationChoicePlugin<GraphQLContext>(),
    // The policy, the cost spend, private for callers (operation-policy.ts `commitOperation`).
    policy.plugin<GraphQLContext>(spendCost(opts.rateLimits ?? null)),
    // After the edge's checks: a cached answer is only served to an operation they let through.
    ...(responseCache ? [responseCachePlugin<GraphQLContext>(responseCache)] : []),
  ];
}

function apolloServer(
  opts: GraphQLOptions,
  logger: Logger,
  gateway: ApolloGateway,
  validationRules: ReturnType<typeof aliasLimitRule>[],
  plugins: ApolloServerPlugin<GraphQLContext>[],
): ApolloServer<GraphQLContext> {
  return new ApolloServer<GraphQLContext>({
    gateway: deferCapable(gateway),
    logger,
    allowBatchedHttpRequests: true,
    // /graphql authenticates by the Authorization header only, never by cookies (docs/api/graphql.md).
    csrfPrevention: false,
    // Refused, when switched off, by noIntrospectionRule (one code for HTTP and WebSocket).
    introspection: true,
    includeStacktraceInErrorResponses: false,
    // The gateway's Lifecycle owns SIGTERM/SIGINT; Apollo's own handlers would re-raise the signal.
    stopOnTerminationSignals: false,
    formatError: formatGatewayError(opts.logger),
    // graphql-js stops parsing past this many tokens (what GraphQL Armor's max-tokens does, without
    // parsing twice); a document is parsed only when Apollo has not cached it already.
    parseOptions: { maxTokens: opts.limits.maxTokens },
    // Validation runs once per document (Apollo caches validated documents by query hash).
    validationRules,
    persistedQueries: {
      ttl: opts.persistedQueries.ttlSeconds,
      ...(opts.persistedQueries.cache ? { cache: opts.persistedQueries.cache } : {}),
    },
    plugins,
  });
}
