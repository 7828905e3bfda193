import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { LeanGraphql } from '../graphql/graphql-lean';
import type { ApolloServer, BaseContext } from '@apollo/server';
import type { Express, RequestHandler } from 'express';
import type { GraphQLSchema } from 'graphql';
import { openDb, type Db } from '../db/db';
import { load } from '../process/lazy';
import { formatGraphQLError, graphqlCaller } from '../graphql/graphql';
import { startGrpcServer, type GrpcServiceBinding } from '../grpc/grpc';
import type { ServiceIdentity } from '../auth/service-identity';
import { CONNECTIONS_CHECKING, guardHttpServer, type HttpTimeouts } from '../http/http-server';
import { metricsEndpoint, type ServiceMetrics } from '../metrics/metrics';
import { migrate } from '../db/migrate';
import { serveSubscriptions } from '../graphql/subscriptions';
import { errorHandler, healthCheck, jsonBody, notFoundHandler, requestContext } from '../http/http';
import { closeHttpServer, Lifecycle, listen } from '../process/lifecycle';
import { refuseRepeatedHeaders } from '../http/single-headers';
import type { Logger } from '../logging/logger';

/**
 * The express app every service starts from: health endpoints first (not logged), then request
 * id + access log, then JSON bodies with the contract's limit. Call `finishHttpApp` after the
 * service's own routes to add the 404 and the single error mapper.
 */
export function createHttpApp(opts: {
  logger: Logger;
  lifecycle: Lifecycle;
  ready: () => Promise<void>;
  bodyLimit: number;
  /** Times every request and serves `/metrics`. */
  metrics?: ServiceMetrics | undefined;
}): Express {
  const app = load.express()();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (opts.metrics) app.use(opts.metrics.http, metricsEndpoint(opts.metrics));
  app.use(healthCheck(opts.lifecycle, opts.ready));
  app.use(requestContext(opts.logger));
  app.use(refuseRepeatedHeaders());
  app.use(jsonBody(opts.bodyLimit));
  return app;
}

export function finishHttpApp(app: Express): Express {
  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}

/** Starts an HTTP server and registers its graceful drain on the lifecycle. */
export async function serveHttp(
  app: Express,
  opts: {
    port: number;
    host: string;
    lifecycle: Lifecycle;
    logger: Logger;
    drainMs: number;
    timeouts?: HttpTimeouts;
    /** Serves the plain `POST /graphql` before express sees it (ADR 0015). */
    lean?: LeanGraphql | undefined;
  },
): Promise<{ server: Server; port: number }> {
  const lean = opts.lean;
  const server = createServer(
    CONNECTIONS_CHECKING,
    lean
      ? (req: IncomingMessage, res: ServerResponse): void => {
          if (lean.claims(req)) lean.serve(req, res);
          else void app(req, res);
        }
      : app,
  );
  // Keep-alive longer than typical proxy idle timeouts, so the gateway's pooled sockets are not cut mid-request.
  server.keepAliveTimeout = 65_000;
  guardHttpServer(server, opts.timeouts ?? { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 });
  const port = await listen(server, opts.port, opts.host);
  opts.lifecycle.register('http server', () => closeHttpServer(server, opts.drainMs));
  opts.logger.info({ port }, 'HTTP listening');
  return { server, port };
}

/** The settings every service's wiring reads (all from `serviceConfigShape`). */
export interface ServiceRuntimeConfig {
  DATABASE_URL: string;
  DATABASE_MIGRATION_URL?: string | undefined;
  DB_SCHEMA?: string | undefined;
  DB_POOL_SIZE: number;
  HTTP_HOST: string;
  HTTP_PORT: number;
  GRPC_PORT: number;
  GRPC_HOST?: string | undefined;
  SHUTDOWN_TIMEOUT_MS: number;
  HTTP_HEADERS_TIMEOUT_MS?: number;
  HTTP_REQUEST_TIMEOUT_MS?: number;
}

/** What a started service hands back to its main (and to tests). */
export interface StartedService {
  lifecycle: Lifecycle;
  db: Db;
  httpPort: number;
  grpcPort: number;
  stop(): Promise<void>;
}

/**
 * Runs a service's wiring with a fresh Lifecycle: whatever was opened before a failure is closed
 * again, so a failed start leaves no pool, server or timer behind.
 */
export async function withLifecycle<T>(logger: Logger, timeoutMs: number, build: (lifecycle: Lifecycle) => Promise<T>): Promise<T> {
  const lifecycle = new Lifecycle(logger);
  try {
    return await build(lifecycle);
  } catch (err) {
    await lifecycle.shutdown(timeoutMs);
    throw err;
  }
}

/**
 * The service's own database — `DATABASE_URL`, schema `DB_SCHEMA` (default: the service's name) —
 * migrated to the latest version, over `DATABASE_MIGRATION_URL` when it is set (a direct
 * connection beside a transaction pooler: the migration's advisory lock is session-level).
 * A `given` database (tests) is migrated but not closed by the service.
 */
export async function openServiceDb(
  name: string,
  config: ServiceRuntimeConfig,
  opts: { logger: Logger; lifecycle: Lifecycle; migrationsDir: string; given?: Db | undefined },
): Promise<Db> {
  const schema = config.DB_SCHEMA ?? name;
  const open = (url: string, poolSize: number, role: string) =>
    openDb({ url, schema, poolSize, logger: opts.logger, applicationName: `halo:${name}:${schema}${role}` });
  const db = opts.given ?? (await open(config.DATABASE_URL, config.DB_POOL_SIZE, ''));
  if (!opts.given) opts.lifecycle.register('database', () => db.close());
  if (opts.given || !config.DATABASE_MIGRATION_URL) {
    await migrate(db, opts.migrationsDir, opts.logger);
    return db;
  }
  const direct = await open(config.DATABASE_MIGRATION_URL, 1, ':migrate').catch((err: unknown) => {
    throw new Error(`DATABASE_MIGRATION_URL: cannot connect: ${(err as Error).message}`, { cause: err });
  });
  try {
    await migrate(direct, opts.migrationsDir, opts.logger);
  } finally {
    await direct.close();
  }
  return db;
}

/**
 * A subgraph's Apollo Server, started and registered for shutdown: Halo reports nothing to
 * Apollo's servers, federated tracing (ftv1) stays off the hot path, and errors are mapped by
 * the kit. Mount it with `subgraphMiddleware`.
 */
export async function startSubgraph<C extends BaseContext>(opts: {
  schema: GraphQLSchema;
  logger: Logger;
  lifecycle: Lifecycle;
}): Promise<ApolloServer<C>> {
  const { ApolloServer: Server } = load.apolloServer();
  const { ApolloServerPluginUsageReportingDisabled, ApolloServerPluginSchemaReportingDisabled, ApolloServerPluginInlineTraceDisabled } =
    load.apolloDisabledPlugins();
  const apollo = new Server<C>({
    schema: opts.schema,
    formatError: formatGraphQLError(opts.logger),
    plugins: [
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
    ],
  });
  await apollo.start();
  opts.lifecycle.register('graphql', () => apollo.stop());
  return apollo;
}

/**
 * A subgraph's per-request context: the request id and the verified caller (401 if invalid), then
 * the service's own part. The same function for Apollo's express integration and the lean path.
 */
export function subgraphContext<C extends BaseContext>(
  jwtSecret: string | undefined,
  extra: (req: IncomingMessage) => Omit<C, 'requestId' | 'caller'>,
): (req: IncomingMessage & { id: string }) => Promise<C> {
  // eslint-disable-next-line @typescript-eslint/require-await -- async on purpose: graphqlCaller throws for a bad token, which Apollo must get as a rejection
  return async (req) => ({ requestId: req.id, caller: graphqlCaller(req.headers.authorization, jwtSecret), ...extra(req) }) as unknown as C;
}

/** `/graphql` for a subgraph: the context gets the request id and the verified caller (401 if invalid). */
export function subgraphMiddleware<C extends BaseContext>(
  apollo: ApolloServer<C>,
  jwtSecret: string | undefined,
  extra: (req: IncomingMessage) => Omit<C, 'requestId' | 'caller'>,
): RequestHandler {
  const context = subgraphContext<C>(jwtSecret, extra);
  return load.expressIntegration().expressMiddleware(apollo, { context: ({ req }) => context(req) });
}

/** A subgraph's Subscription type, served over WebSocket on the service's HTTP server. */
export interface SubgraphSubscriptions {
  schema: GraphQLSchema;
  /** The service's own context for each operation (the kit adds requestId and caller). */
  context?: ((req: IncomingMessage) => object) | undefined;
  jwtSecret: string | undefined;
  /** Largest accepted message (BODY_LIMIT). */
  maxPayload: number;
}

/**
 * Starts a wired service: its gRPC services (with grpc.health.v1) and its HTTP app, both drained
 * on shutdown; with `subscriptions`, GraphQL over WebSocket on the same HTTP server, whose sockets
 * are closed (1001) before the HTTP server drains.
 */
export async function serveService(opts: {
  app: Express;
  /** The lean `/graphql` path in front of the app (ADR 0015). */
  lean?: LeanGraphql | undefined;
  subscriptions?: SubgraphSubscriptions | undefined;
  grpcServices: GrpcServiceBinding[];
  /** Verifies the callers of `grpcServices` (docs/service-identity.md). */
  identity: ServiceIdentity;
  metrics?: ServiceMetrics | undefined;
  config: ServiceRuntimeConfig;
  lifecycle: Lifecycle;
  logger: Logger;
  db: Db;
}): Promise<StartedService> {
  const { config, lifecycle, logger } = opts;
  finishHttpApp(opts.app);
  const grpcServer = await startGrpcServer({
    host: config.GRPC_HOST ?? config.HTTP_HOST,
    port: config.GRPC_PORT,
    services: opts.grpcServices,
    identity: opts.identity,
    metrics: opts.metrics,
    logger,
  });
  lifecycle.register('grpc server', () => grpcServer.shutdown(config.SHUTDOWN_TIMEOUT_MS));
  const { server, port } = await serveHttp(opts.app, {
    port: config.HTTP_PORT,
    host: config.HTTP_HOST,
    lifecycle,
    logger,
    drainMs: config.SHUTDOWN_TIMEOUT_MS,
    lean: opts.lean,
    timeouts: { headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS ?? 10_000, requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS ?? 30_000 },
  });
  // Registered after the HTTP server, so closed before it: upgraded sockets would hold its drain.
  if (opts.subscriptions) serveSubscriptions({ ...opts.subscriptions, server, logger, lifecycle, metrics: opts.metrics });
  return {
    lifecycle,
    db: opts.db,
    httpPort: port,
    grpcPort: grpcServer.port,
    stop: () => lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS),
  };
}
