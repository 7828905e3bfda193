import { hostname } from 'node:os';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  closeHttpServer,
  CONNECTIONS_CHECKING,
  guardHttpServer,
  healthCheck,
  Lifecycle,
  listen,
  openRedis,
  REQUEST_ID_HEADER,
  repeatedHeader,
  repeatedHeaderMessage,
  requestIdOf,
  sendJson,
  serviceIdentityFor,
  toRestError,
  TOKEN_REQUIRED,
  type Logger,
} from '@halo/kit';
import { createCallerResolver } from './auth/callers';
import type { GatewayConfig } from './config';
import { createDocs } from './docs/documents';
import { createGraphQL } from './graphql/engine';
import { createGatewayMetrics, GatewayResponse, ROUTE_DOCUMENTS, ROUTE_GRAPHQL, ROUTE_UNMATCHED } from './observability/metrics';
import { loadTrustedDocuments, RedisQueryCache } from './graphql/persisted';
import { RedisResponseTier } from './graphql/response-cache';
import { createServiceProxies } from './rest/proxy';
import { createSubscriptions } from './subscriptions/server';
import { migrationGuides } from './rest/versioning';
import { createSupergraphSource, type ServedComposition } from './supergraph';
import { createUsageReporting } from './usage';

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

const notFound = (_req: IncomingMessage, res: ServerResponse) => sendJson(res, 404, { error: 'Not found' });

/**
 * The single ingress: one raw node:http server. Per request it settles the request id, then
 * dispatches: health → (access log) → GraphQL → the REST route table → migration guides and the
 * API's documents (`/`, `/openapi.json`, `/docs`) → 404. Nothing on the REST path parses
 * more than the route table needs, and bodiless requests stream through untouched.
 */
export function createGateway(config: GatewayConfig, logger: Logger): Gateway {
  const lifecycle = new Lifecycle(logger);
  // Prometheus metrics, on their own port (src/metrics.ts); off: nothing is measured at all.
  const metrics = config.METRICS_PORT === null ? null : createGatewayMetrics(logger);
  const identity = serviceIdentityFor('gateway', config);
  // The supergraph, route table and OpenAPI document: the committed files at boot, then the
  // registry's compositions (REGISTRY_URL) or the files' new versions (src/supergraph).
  const source = createSupergraphSource({
    supergraphPath: config.SUPERGRAPH_PATH,
    routesPath: config.ROUTES_PATH,
    openapiPath: config.OPENAPI_PATH,
    registry: config.REGISTRY_URL
      ? { url: config.REGISTRY_URL, pollMs: config.REGISTRY_POLL_MS, identity, gatewayId: GATEWAY_ID }
      : undefined,
    serviceUrlOverrides: config.explicitServiceUrls,
    defaultServiceUrls: config.serviceUrls,
    // Kept in a local: the dispatcher reads it per request.
    onRoutes: (next) => void (routes = next),
    logger,
  });
  let routes = source.routes();
  // Which fields operations use, for the registry's checks (src/usage); off the request path.
  const usage =
    config.USAGE_REPORTING && config.REGISTRY_URL
      ? createUsageReporting({
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
        })
      : null;
  const docs = createDocs({ openapi: source.openapi, graphiql: config.HALO_ENV === 'development' });
  const guides = migrationGuides();
  const proxies = createServiceProxies({
    targets: config.serviceUrls,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    bodyLimit: config.BODY_LIMIT,
    logger,
    ...(metrics ? { metrics } : {}),
    trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
  });
  const callers = createCallerResolver({
    identity,
    jwtSecret: config.JWT_SECRET,
    authGrpcAddr: config.AUTH_GRPC_ADDR,
    deadlineMs: config.GRPC_DEADLINE_MS,
    metrics: metrics?.grpcClient,
  });
  // APQ registrations and cached answers in the Redis every replica shares; without one, in this
  // process (embedded).
  const redis = config.REDIS_URL ? openRedis(config.REDIS_URL, logger) : null;
  const graphql = createGraphQL({
    callers,
    supergraph: source.hook,
    subgraphUrl: source.subgraphUrl,
    bodyLimit: config.BODY_LIMIT,
    logger,
    introspection: config.GRAPHQL_INTROSPECTION,
    limits: {
      maxDepth: config.GRAPHQL_MAX_DEPTH,
      maxCost: config.GRAPHQL_MAX_COST,
      defaultListSize: config.GRAPHQL_DEFAULT_LIST_SIZE,
      maxAliases: config.GRAPHQL_MAX_ALIASES,
      maxTokens: config.GRAPHQL_MAX_TOKENS,
      maxBatch: config.GRAPHQL_MAX_BATCH,
    },
    persistedQueries: {
      ...(redis ? { cache: new RedisQueryCache(redis, config.REDIS_KEY_PREFIX, logger) } : {}),
      ttlSeconds: config.GRAPHQL_APQ_TTL_S,
      ...(config.GRAPHQL_TRUSTED_DOCUMENTS ? { trusted: loadTrustedDocuments(config.GRAPHQL_TRUSTED_DOCUMENTS) } : {}),
    },
    queryPlanCacheMiB: config.GRAPHQL_QUERY_PLAN_CACHE_MIB,
    dedupeInflight: config.GRAPHQL_DEDUPE_INFLIGHT,
    responseCacheMiB: config.GRAPHQL_RESPONSE_CACHE_MIB,
    ...(redis ? { sharedResponseCache: new RedisResponseTier(redis, config.REDIS_KEY_PREFIX, logger) } : {}),
    plugins: [...(metrics ? [metrics.graphqlPlugin()] : []), ...(usage ? [usage.plugin()] : [])],
  });
  const health = healthCheck(lifecycle, async () => undefined);

  const server = createServer({ ServerResponse: GatewayResponse, ...CONNECTIONS_CHECKING }, (req, res) => {
    const requestId = requestIdOf(req);
    // Set on the request so the proxy and the subgraph fetches forward it upstream.
    req.headers[REQUEST_ID_HEADER] = requestId;
    res.setHeader('X-Request-Id', requestId);
    // Nothing is cacheable unless what answers says so (GraphQL's hints, a service's header, the
    // documents): every error and the gateway's own answers (401, 404, 405, 413…) stay out of caches.
    res.setHeader('Cache-Control', 'no-store');
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    // Probes come every few seconds and are not worth a log line each.
    if (path === '/readyz') return readiness(res, lifecycle, graphql.isReady(), source.status());
    if (path === '/healthz') return health(req, res, () => notFound(req, res));
    if (logger.isLevelEnabled('info')) accessLog(logger, req, res, requestId, path);
    metrics?.track(res);
    // Credentials and the payment key are single-valued: sent twice, nothing may guess which one counts.
    const repeated = repeatedHeader(req.rawHeaders);
    if (repeated !== null) {
      const message = repeatedHeaderMessage(repeated);
      return path === '/graphql'
        ? sendJson(res, 400, { errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] })
        : sendJson(res, 400, { error: message });
    }
    if (path === '/graphql') {
      res.route = ROUTE_GRAPHQL;
      // A browser opening /graphql in development gets GraphiQL; everything else is an operation.
      if (docs.graphiql(req, res)) return;
      return graphql.handle(req, res, requestId);
    }

    const match = routes.match(req, url, q, path);
    if (match.headers) for (const name in match.headers) res.setHeader(name, match.headers[name]!);
    if (match.kind === 'route') {
      res.route = match.route.path;
      // A versioned request goes to the path that serves its version (e.g. /api/v2/products → /v2/products).
      if (match.url !== undefined) req.url = match.url;
      // The proxy reads and checks a JSON body (413, 400 Invalid JSON) and streams any other.
      if (!match.route.auth) return proxies.forward(match.route.service, req, res);
      // Protected: no caller, no proxying (docs/api/auth.md: 401 Token required / Invalid token).
      return void callers.resolve(req, requestId).then(
        (caller) => {
          if (!caller) return sendJson(res, 401, { error: TOKEN_REQUIRED });
          proxies.forward(match.route.service, req, res);
        },
        (err: unknown) => sendError(res, err, logger, requestId),
      );
    }
    if (match.kind === 'method-not-allowed') {
      return sendJson(res, 405, { error: 'Method not allowed' }, { allow: match.allow });
    }
    if (match.kind === 'unsupported-version') return sendJson(res, 400, { error: match.error });
    // The migration guides that deprecation `Link` headers point to; the API's own documents.
    res.route = ROUTE_DOCUMENTS;
    if (guides.serve(req, res, path)) return;
    if (docs.serve(req, res, path)) return;
    res.route = ROUTE_UNMATCHED;
    return notFound(req, res);
  });
  // Longer than common load-balancer idle timeouts, so they close idle connections first.
  server.keepAliveTimeout = 65_000;
  // A slow client holds one connection for a bounded time, then gets a contract 408.
  guardHttpServer(server, { headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS });
  // GraphQL over WebSocket on the same port and path (graphql-transport-ws).
  const subscriptions = createSubscriptions({
    server,
    callers,
    policy: graphql.policy,
    subgraphUrls: source.subgraphUrls,
    parseOptions: graphql.parseOptions,
    validationRules: graphql.validationRules,
    executeOperation: (request, context) => graphql.executeOperation(request, context),
    maxPayload: config.BODY_LIMIT,
    recordUsage: usage ? (schema, document, operation, client) => usage.record(schema, document, operation, client) : undefined,
    logger,
  });

  // Read at every scrape.
  metrics?.watch({
    subscriptions: subscriptions.activeCount,
    dedupe: graphql.dedupe,
    responseCache: graphql.responseCache,
    composition: () => {
      const served = source.status();
      return { composition: served.composition, source: served.source, registryUp: served.registry && served.registry.up };
    },
    usage: () => usage && usage.stats(),
  });
  let metricsServer: Server | null = null;

  // Released in reverse: the server drains first, then GraphQL stops, then the upstream pools go;
  // the metrics server last, so scrapes are answered while everything else drains.
  lifecycle.register('metrics server', async () => {
    if (metricsServer) await closeHttpServer(metricsServer, config.SHUTDOWN_TIMEOUT_MS);
  });
  lifecycle.register('composed files', () => source.stop());
  // After the server drained: what the last requests used is sent too (best effort).
  lifecycle.register('usage', async () => usage?.stop());
  lifecycle.register('upstream pools', () => {
    proxies.close();
    callers.close();
    redis?.disconnect();
  });
  lifecycle.register('graphql', () => graphql.stop());
  lifecycle.register('http server', () => closeHttpServer(server, config.SHUTDOWN_TIMEOUT_MS));
  // Released first: sockets are told 1001 Going away before the HTTP server drains.
  lifecycle.register('subscriptions', () => subscriptions.close());

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
 * One line per request, only when info is enabled. The path is logged without its query string:
 * queries can carry credentials (an OAuth callback's `code`) and logs must never hold those.
 */
function accessLog(logger: Logger, req: IncomingMessage, res: ServerResponse, requestId: string, path: string): void {
  const start = process.hrtime.bigint();
  // 'close' also fires when the client leaves before the answer is complete ('finish' does not).
  res.once('close', () => {
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const line = { requestId, method: req.method, path, status: res.statusCode, ms };
    logger.info(res.writableFinished ? line : { ...line, aborted: true }, 'request');
  });
}

/** A HaloError as its REST answer; anything else is logged and answered 500 without details. */
function sendError(res: ServerResponse, err: unknown, logger: Logger, requestId: string): void {
  const { status, body } = toRestError(err);
  if (status >= 500) logger.error({ err, requestId }, 'request failed');
  if (!res.headersSent) sendJson(res, status, body);
}

/**
 * `/readyz`: 200 while the gateway serves a supergraph, whatever the registry does (the last good
 * composition keeps being served), with what it serves and the registry's state as detail.
 */
function readiness(res: ServerResponse, lifecycle: Lifecycle, ready: boolean, served: ServedComposition): void {
  if (!lifecycle.accepting) return sendJson(res, 503, { status: 'shutting down' });
  if (!ready) return sendJson(res, 503, { status: 'unavailable' });
  const { registry } = served;
  const detail = registry === null ? 'off' : registry.up ? 'ok' : `unreachable since ${new Date(registry.since).toISOString()}`;
  sendJson(res, 200, {
    status: 'ready',
    composition: served.composition,
    source: served.source,
    servedSince: new Date(served.since).toISOString(),
    registry: detail,
    ...(registry && !registry.up && registry.reason ? { registryError: registry.reason } : {}),
  });
}
