import { hostname } from 'node:os';
import type { Server } from 'node:http';
import { serviceIdentityFor, type ServiceIdentity } from '@halo/kit/auth';
import { closeRedis, openRedis, type Redis } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';
import { closeHttpServer, Lifecycle, listen } from '@halo/kit/process';
import { createCallerResolver, type CallerResolver } from './auth';
import { graphqlLimits, rateLimitConfig, type GatewayConfig } from './config';
import { createDocs, migrationGuides } from './docs';
import { createCors } from './http';
import {
  createGraphQL,
  loadTrustedDocuments,
  RedisQueryCache,
  RedisResponseTier,
  RegisteredOperations,
  type GraphQLHandler,
} from './graphql';
import { createGatewayMetrics, type GatewayMetrics, type WatchedSources } from './observability';
import { createHttpServer } from './pipeline';
import { createRateLimits, type RateLimits } from './ratelimit';
import { createRestStage, createServiceProxies, type ServiceProxies } from './rest';
import { createSubscriptions } from './subscriptions';
import {
  createSupergraphSource,
  startOperationsFeed,
  type OperationsFeed,
  type RegistryConnection,
  type SupergraphSource,
} from './supergraph';
import { createUsageReporting, type UsageReporting } from './usage';

export interface Gateway {
  server: Server;
  /** Every resource in shutdown order; `main` hands it the signals. */
  lifecycle: Lifecycle;
  /**
   * Loads the supergraph, starts Apollo, then listens (`HTTP_PORT` 0 picks a free port), and
   * serves the metrics on `METRICS_PORT` (`metricsPort`: null when off).
   */
  start(): Promise<{ port: number; metricsPort: number | null }>;
  /** Graceful: stop accepting, drain, stop Apollo and the gateway, drop upstream pools. */
  stop(): Promise<void>;
}

/** This process among the gateways the registry knows (`GET /v1/gateways`): its pod name in Kubernetes. */
const GATEWAY_ID = `${hostname()}:${process.pid}`;

/**
 * The gateway wired from its stages (src/pipeline.ts dispatches to them): the supergraph source,
 * auth, rate limits, GraphQL, REST, documents, subscriptions, metrics and usage reporting, each
 * made from the config here and released in order by one Lifecycle. APQ registrations, cached
 * answers and rate-limit counters live in the Redis every replica shares (REDIS_URL); without
 * one, in this process (embedded).
 */
export function createGateway(config: GatewayConfig, logger: Logger): Gateway {
  const lifecycle = new Lifecycle(logger);
  // Prometheus metrics, on their own port (src/observability); off: nothing is measured at all.
  const metrics = config.METRICS_PORT === null ? null : createGatewayMetrics(logger);
  const identity = serviceIdentityFor('gateway', config);
  const registry: RegistryConnection | undefined = config.REGISTRY_URL
    ? { url: config.REGISTRY_URL, pollMs: config.REGISTRY_POLL_MS, identity, gatewayId: GATEWAY_ID }
    : undefined;
  const source = supergraphSource(config, registry, logger, (next) => rest.setRoutes(next));
  const { registered, feed } = registeredOperations(config, registry, metrics, logger);
  const usage = usageReporting(config, identity, source, logger);
  const proxies = createServiceProxies({
    targets: config.serviceUrls,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    bodyLimit: config.BODY_LIMIT,
    logger,
    ...(metrics ? { metrics } : {}),
    trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
    identity,
  });
  const callers = createCallerResolver({
    identity,
    jwtSecret: config.JWT_SECRET,
    authGrpcAddr: config.AUTH_GRPC_ADDR,
    deadlineMs: config.GRPC_DEADLINE_MS,
    metrics: metrics?.grpcClient,
  });
  // APQ registrations, cached answers and the rate-limit counters in the Redis every replica
  // shares; without one, in this process (embedded).
  const { redis, rateLimits } = sharedCounters(config, metrics, logger);
  const graphql = graphqlStage(config, { callers, source, redis, rateLimits, metrics, usage, registered, logger });
  const rest = createRestStage({ routes: source.routes(), proxies, callers, rateLimits, logger });
  // GraphQL over WebSocket on /graphql (graphql-transport-ws), and over SSE at /graphql/stream.
  const subscriptions = subscriptionsStage(config, { callers, graphql, source, rateLimits, usage, logger });
  const server = createHttpServer(
    {
      cors: createCors(config.CORS_ORIGINS),
      graphql,
      stream: subscriptions.serveStream,
      rest,
      guides: migrationGuides(),
      docs: createDocs({ openapi: source.openapi, graphiql: config.HALO_ENV === 'development' }),
      metrics,
      lifecycle,
      served: source.status,
      operations: feed.status,
      registryBootFromFiles: config.REGISTRY_BOOT_FROM_FILES,
      logger,
    },
    { headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS },
  );
  subscriptions.attach(server);
  metrics?.watch(watchedBy(subscriptions, graphql, source, usage));
  let metricsServer: Server | null = null;
  registerShutdown(lifecycle, config, {
    server,
    metricsServer: () => metricsServer,
    source,
    feed,
    usage,
    proxies,
    callers,
    redis,
    graphql,
    subscriptions,
  });

  return {
    server,
    lifecycle,
    async start() {
      await graphql.start();
      let metricsPort: number | null = null;
      if (metrics && config.METRICS_PORT !== null) {
        const served = await metrics.listen(config.HTTP_HOST, config.METRICS_PORT);
        metricsServer = served.server;
        metricsPort = served.port;
      }
      const port = await listen(server, config.HTTP_PORT, config.HTTP_HOST);
      logger.info({ port, host: config.HTTP_HOST, metricsPort }, 'gateway listening');
      return { port, metricsPort };
    },
    stop: () => lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS),
  };
}

/**
 * The supergraph, route table and OpenAPI document: the committed files at boot, then the
 * registry's compositions (REGISTRY_URL) or the files' new versions (src/supergraph).
 */
function supergraphSource(
  config: GatewayConfig,
  registry: RegistryConnection | undefined,
  logger: Logger,
  onRoutes: NonNullable<Parameters<typeof createSupergraphSource>[0]['onRoutes']>,
): SupergraphSource {
  return createSupergraphSource({
    supergraphPath: config.SUPERGRAPH_PATH,
    routesPath: config.ROUTES_PATH,
    openapiPath: config.OPENAPI_PATH,
    registry,
    serviceUrlOverrides: config.explicitServiceUrls,
    defaultServiceUrls: config.serviceUrls,
    onRoutes,
    logger,
  });
}

/**
 * The operations clients registered (PERSISTED_OPERATIONS audit or enforce): the trusted documents
 * file, and the registry's lists polled beside the supergraph. Null (and no feed) when off.
 */
function registeredOperations(
  config: GatewayConfig,
  registry: RegistryConnection | undefined,
  metrics: GatewayMetrics | null,
  logger: Logger,
): { registered: RegisteredOperations | null; feed: OperationsFeed } {
  if (config.PERSISTED_OPERATIONS === 'off') return { registered: null, feed: startOperationsFeed(null, undefined, logger) };
  const registered = new RegisteredOperations({
    mode: config.PERSISTED_OPERATIONS,
    allowClients: config.PERSISTED_OPERATIONS_ALLOW_CLIENTS,
    ...(config.GRAPHQL_TRUSTED_DOCUMENTS ? { shared: loadTrustedDocuments(config.GRAPHQL_TRUSTED_DOCUMENTS) } : {}),
    logger,
    ...(metrics ? { count: metrics.registeredOperation } : {}),
  });
  return { registered, feed: startOperationsFeed(registered, registry, logger) };
}

/** Which fields operations use, for the registry's checks (src/usage); off the request path. Null when off. */
function usageReporting(config: GatewayConfig, identity: ServiceIdentity, source: SupergraphSource, logger: Logger): UsageReporting | null {
  if (!config.USAGE_REPORTING || !config.REGISTRY_URL) return null;
  return createUsageReporting({
    url: config.REGISTRY_URL,
    identity,
    gatewayId: GATEWAY_ID,
    served: () => {
      const served = source.status();
      return served.source === 'registry' ? Number(served.composition) : null;
    },
    flushMs: config.USAGE_FLUSH_MS,
    maxOperations: config.USAGE_MAX_OPERATIONS,
    logger,
  });
}

/**
 * The Redis every replica shares (null: embedded), and the rate limits counting requests and
 * GraphQL cost per caller in it (failing open), else in this process.
 */
function sharedCounters(config: GatewayConfig, metrics: GatewayMetrics | null, logger: Logger) {
  const redis = config.REDIS_URL ? openRedis(config.REDIS_URL, logger) : null;
  const rateLimits = createRateLimits({
    config: rateLimitConfig(config),
    redis,
    trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
    logger,
    counters: metrics?.rateLimit,
  });
  return { redis, rateLimits };
}

/** What the metrics read at every scrape. */
function watchedBy(
  subscriptions: { activeCount: () => number; upstreamCount: () => number },
  graphql: GraphQLHandler,
  source: SupergraphSource,
  usage: UsageReporting | null,
): WatchedSources {
  return {
    subscriptions: subscriptions.activeCount,
    upstreamSubscriptions: subscriptions.upstreamCount,
    dedupe: graphql.dedupe,
    responseCache: graphql.responseCache,
    composition: () => {
      const served = source.status();
      return { composition: served.composition, source: served.source, registryUp: served.registry && served.registry.up };
    },
    usage: () => usage && usage.stats(),
  };
}

/** GraphQL over WebSocket and over SSE: the same admission and rate limits as HTTP, forwarded to the owning subgraph. */
function subscriptionsStage(
  config: GatewayConfig,
  {
    callers,
    graphql,
    source,
    rateLimits,
    usage,
    logger,
  }: Pick<GraphQLParts, 'callers' | 'source' | 'rateLimits' | 'usage' | 'logger'> & { graphql: GraphQLHandler },
) {
  return createSubscriptions({
    callers,
    policy: graphql.policy,
    subgraphUrls: source.subgraphUrls,
    documents: graphql.documents,
    executeOperation: graphql.executeOperation,
    executeDeferred: graphql.executeDeferred,
    maxPayload: config.BODY_LIMIT,
    origins: config.CORS_ORIGINS,
    apiKeyRecheckMs: config.API_KEY_RECHECK_MS,
    rateLimits,
    recordUsage: usage
      ? (schema, document, operation, client, variables, cost) => usage.record(schema, document, operation, client, variables, cost)
      : undefined,
    registered: graphql.registered,
    logger,
  });
}

interface GraphQLParts {
  callers: CallerResolver;
  source: SupergraphSource;
  redis: Redis | null;
  rateLimits: RateLimits | null;
  metrics: GatewayMetrics | null;
  usage: UsageReporting | null;
  registered?: RegisteredOperations | null;
  logger: Logger;
}

function graphqlStage(
  config: GatewayConfig,
  { callers, source, redis, rateLimits, metrics, usage, registered, logger }: GraphQLParts,
): GraphQLHandler {
  return createGraphQL({
    callers,
    rateLimits,
    supergraph: source.hook,
    subgraphUrl: source.subgraphUrl,
    bodyLimit: config.BODY_LIMIT,
    logger,
    introspection: config.GRAPHQL_INTROSPECTION,
    limits: graphqlLimits(config),
    persistedQueries: {
      ...(redis ? { cache: new RedisQueryCache(redis, config.REDIS_KEY_PREFIX, logger) } : {}),
      ttlSeconds: config.GRAPHQL_APQ_TTL_S,
    },
    registered: registered ?? null,
    queryPlanCacheMiB: config.GRAPHQL_QUERY_PLAN_CACHE_MIB,
    dedupeInflight: config.GRAPHQL_DEDUPE_INFLIGHT,
    responseCacheMiB: config.GRAPHQL_RESPONSE_CACHE_MIB,
    ...(redis ? { sharedResponseCache: new RedisResponseTier(redis, config.REDIS_KEY_PREFIX, logger) } : {}),
    plugins: [...(metrics ? [metrics.graphqlPlugin()] : []), ...(usage ? [usage.plugin()] : [])],
    observers: [...(metrics ? [metrics.observeOperation] : []), ...(usage ? [usage.observe] : [])],
    lean: config.GRAPHQL_LEAN,
    ...(metrics ? { leanAnswered: metrics.leanAnswered } : {}),
  });
}

interface Releasable {
  server: Server;
  /** Made by `start`, so read at shutdown. */
  metricsServer: () => Server | null;
  source: SupergraphSource;
  feed: OperationsFeed;
  usage: UsageReporting | null;
  proxies: ServiceProxies;
  callers: CallerResolver;
  redis: Redis | null;
  graphql: GraphQLHandler;
  subscriptions: { close(): Promise<void> };
}

/**
 * Released in reverse: sockets are told 1001 first, the server drains, then GraphQL stops, then
 * the upstream pools go; the metrics server last, so scrapes are answered while everything else drains.
 */
function registerShutdown(lifecycle: Lifecycle, config: GatewayConfig, r: Releasable): void {
  lifecycle.register('metrics server', async () => {
    const metricsServer = r.metricsServer();
    if (metricsServer) await closeHttpServer(metricsServer, config.SHUTDOWN_TIMEOUT_MS);
  });
  lifecycle.register('composed files', () => r.source.stop());
  lifecycle.register('operation lists', () => r.feed.stop());
  // After the server drained: what the last requests used is sent too (best effort).
  lifecycle.register('usage', async () => r.usage?.stop());
  lifecycle.register('upstream pools', async () => {
    r.callers.close();
    if (r.redis) closeRedis(r.redis);
    await r.proxies.close();
  });
  lifecycle.register('graphql', () => r.graphql.stop());
  lifecycle.register('http server', () => closeHttpServer(r.server, config.SHUTDOWN_TIMEOUT_MS));
  // Released first: sockets are told 1001 Going away before the HTTP server drains.
  lifecycle.register('subscriptions', () => r.subscriptions.close());
}
