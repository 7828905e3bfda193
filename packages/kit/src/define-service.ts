import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import type { BaseContext } from '@apollo/server';
import type { Express, RequestHandler } from 'express';
import { parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import { ConfigError, env, loadConfig, serviceConfigShape, type z } from './config';
import type { Db } from './db';
import type { GrpcServiceBinding } from './grpc';
import { Lifecycle } from './lifecycle';
import type { Logger } from './logger';
import { refuseDevSecrets } from './dev-secrets';
import { refuseNulArguments, refuseNulInput } from './nul';
import { enforceDeclaredScopes } from './scopes';
import { serviceIdentityFor, type ServiceIdentity } from './service-identity';
import { createMetrics, type ServiceMetrics } from './metrics';
import { createHttpApp, openServiceDb, runService, serveService, startSubgraph, subgraphMiddleware, withLifecycle, type StartedService, type SubgraphSubscriptions } from './service';
import { SERVICES, type ServiceName } from './topology';

type Env = Record<string, string | undefined>;

/** What the kit reads for every service: the shared variables plus the demo-seed switch. */
export function kitConfigShape(name: ServiceName) {
  return {
    ...serviceConfigShape(SERVICES[name]),
    /** Seeds the service's demo data; defaults to on only when HALO_ENV=development, refused in production. */
    SEED_DEMO_DATA: env.flag(),
    /** Apply the service's migrations and exit 0, serving nothing (the chart's migration Job). */
    HALO_MIGRATE_ONLY: env.flag(),
  };
}

type KitShape = ReturnType<typeof kitConfigShape>;

/** The settings the kit itself reads, SEED_DEMO_DATA resolved to a boolean. */
export type KitConfig = Omit<z.infer<z.ZodObject<KitShape>>, 'SEED_DEMO_DATA'> & { SEED_DEMO_DATA: boolean };

/** A service's settings: the kit's and the service's own shape `X`. */
export type ServiceConfig<X extends z.ZodRawShape = {}> = KitConfig & z.infer<z.ZodObject<X>>;

/** Loads and validates a service's settings once; the demo-seed rule lives here and nowhere else. */
export function loadServiceConfig<X extends z.ZodRawShape = {}>(name: ServiceName, extra?: X, source: Env = process.env): ServiceConfig<X> {
  const loaded = loadConfig({ ...kitConfigShape(name), ...extra }, source);
  const seed = (loaded as { SEED_DEMO_DATA?: boolean }).SEED_DEMO_DATA;
  const haloEnv = (loaded as { HALO_ENV: string }).HALO_ENV;
  refuseDevSecrets(source, haloEnv);
  if (seed && haloEnv === 'production') {
    throw new ConfigError('Invalid configuration: SEED_DEMO_DATA: demo data is never seeded when HALO_ENV=production');
  }
  return { ...loaded, SEED_DEMO_DATA: seed ?? haloEnv === 'development' } as unknown as ServiceConfig<X>;
}

/** What a service's own code gets to build its domain (and, with the domain, to seed). */
export interface ServiceParts<C> {
  db: Db;
  /** This service's identity: pass it (with the callee's name) to gRPC clients as `auth`. */
  identity: ServiceIdentity;
  /** This process's Prometheus registry (`/metrics`): add the service's own counters to it. */
  metrics: ServiceMetrics;
  config: C;
  logger: Logger;
  /** Register anything the domain opens (clients, timers) here; it is closed in reverse on shutdown. */
  lifecycle: Lifecycle;
}

/**
 * Everything that differs between two Halo services; the kit does the rest (config, database and
 * migrations, seed, HTTP app with health and request context, the subgraph and its schema file,
 * gRPC with health, graceful shutdown). See docs/adding-a-service.md.
 */
export interface ServiceDefinition<X extends z.ZodRawShape, C extends KitConfig, D> {
  /** The one short name (a key of `SERVICES`): schema, logger, ports, proto package. */
  name: ServiceName;
  /** The service's folder; the kit reads `migrations/` and `schema.graphql` from it. */
  root: string;
  /** The service's own variables, validated with the kit's (`env.*` helpers, `z`). */
  config?: X;
  /** Rules across variables and derived settings, after validation; throw `ConfigError` naming the variable. */
  refineConfig?: (config: ServiceConfig<X>, source: Env) => C;
  /** Builds the domain — the one way in for every transport — and whatever the adapters need beside it. */
  domain: (parts: ServiceParts<C>) => D | Promise<D>;
  /** Demo data, after migrations, only when SEED_DEMO_DATA is on. Idempotent. */
  seed?: (parts: ServiceParts<C> & { domain: D }) => Promise<void>;
  /** Readiness beyond the database ping (e.g. Redis). */
  ready?: (domain: D) => Promise<void>;
  /** Express settings the routes rely on (e.g. `trust proxy`), before any route. */
  configureHttp?: (app: Express, config: C) => void;
  /**
   * The subgraph: its schema from `<root>/schema.graphql` (build it with @apollo/subgraph) and
   * per-request context. A schema with a Subscription type is also served over WebSocket
   * (graphql-ws, `/graphql` on the HTTP port; kit/src/subscriptions.ts).
   */
  graphql?: {
    schema: (typeDefs: DocumentNode, domain: D) => GraphQLSchema;
    /**
     * Added to `{ requestId, caller }`, e.g. the request's DataLoaders (over domain batch methods):
     * once per HTTP request, and once per WebSocket operation (given the upgrade request).
     */
    context?: (domain: D, req: IncomingMessage) => object;
    /** Serve the Subscription type over WebSocket; default: when the schema has one. */
    subscriptions?: boolean;
  };
  /** The REST routes (after /graphql; the kit adds the 404 and the error mapper after them). */
  rest?: (domain: D, config: C) => RequestHandler;
  /** gRPC services (the kit adds grpc.health.v1). */
  grpc?: (domain: D, logger: Logger) => GrpcServiceBinding[];
}

export interface RunningService<D> extends StartedService {
  domain: D;
}

export interface DefinedService<C, D> {
  readonly name: ServiceName;
  readonly migrationsDir: string;
  loadConfig(source?: Env): C;
  /** Applies the service's migrations with its own settings and closes the connection (HALO_MIGRATE_ONLY). */
  migrate(config: C, logger: Logger): Promise<void>;
  /** Starts the service; a `db` given (tests: a throwaway schema) is migrated but not closed by it. */
  start(config: C, logger: Logger, opts?: { db?: Db | undefined }): Promise<RunningService<D>>;
  /** The process entry point: config (one line and exit 1 when bad), start, signals; with HALO_MIGRATE_ONLY, migrate and exit. */
  main(): Promise<void>;
}

export function defineService<X extends z.ZodRawShape = {}, C extends KitConfig = ServiceConfig<X>, D = unknown>(
  def: ServiceDefinition<X, C, D>,
): DefinedService<C, D> {
  const migrationsDir = resolve(def.root, 'migrations');

  const loadConfigFor = (source: Env = process.env): C => {
    const config = loadServiceConfig(def.name, def.config, source);
    return def.refineConfig ? def.refineConfig(config, source) : (config as unknown as C);
  };

  const start = (config: C, logger: Logger, opts: { db?: Db | undefined } = {}): Promise<RunningService<D>> =>
    withLifecycle(logger, config.SHUTDOWN_TIMEOUT_MS, async (lifecycle) => {
      const identity = serviceIdentityFor(def.name, config);
      const db = await openServiceDb(def.name, config, { logger, lifecycle, migrationsDir, given: opts.db });
      const metrics = createMetrics(def.name);
      metrics.watchDb(db);
      const parts: ServiceParts<C> = { db, identity, metrics, config, logger, lifecycle };
      const domain = await def.domain(parts);
      if (config.SEED_DEMO_DATA && def.seed) await def.seed({ ...parts, domain });

      const extraReady = def.ready;
      const ready = extraReady ? async () => (await db.ping(), await extraReady(domain)) : () => db.ping();
      const app = createHttpApp({ logger, lifecycle, ready, bodyLimit: config.BODY_LIMIT, metrics });
      def.configureHttp?.(app, config);
      let subscriptions: SubgraphSubscriptions | undefined;
      if (def.graphql) {
        const typeDefs = parse(readFileSync(resolve(def.root, 'schema.graphql'), 'utf8'));
        // Before both servers are built from it, so HTTP and WebSocket operations alike refuse NUL
        // and keep API keys within the scopes the SDL declares (`@requiresScopes`).
        const schema = refuseNulArguments(enforceDeclaredScopes(def.graphql.schema(typeDefs, domain), typeDefs));
        const apollo = await startSubgraph<BaseContext>({ schema, logger, lifecycle });
        const context = def.graphql.context;
        const extra = (req: IncomingMessage) => (context ? context(domain, req) : {});
        app.use('/graphql', subgraphMiddleware(apollo, config.JWT_SECRET, extra));
        if (def.graphql.subscriptions ?? schema.getSubscriptionType() != null) {
          subscriptions = { schema, context: extra, jwtSecret: config.JWT_SECRET, maxPayload: config.BODY_LIMIT };
        }
      }
      // The NUL rule for every REST route (query and body; path parameters in validateRestInput).
      if (def.rest) app.use(refuseNulInput(), def.rest(domain, config));

      const grpcServices = def.grpc?.(domain, logger) ?? [];
      return { ...(await serveService({ app, grpcServices, identity, metrics, config, lifecycle, logger, db, subscriptions })), domain };
    });

  const migrateOnly = async (config: C, logger: Logger): Promise<void> => {
    const lifecycle = new Lifecycle(logger);
    try {
      await openServiceDb(def.name, config, { logger, lifecycle, migrationsDir });
      logger.info({ schema: config.DB_SCHEMA ?? def.name }, 'migrations applied (HALO_MIGRATE_ONLY): exiting');
    } finally {
      await lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS);
    }
  };

  return {
    name: def.name,
    migrationsDir,
    loadConfig: loadConfigFor,
    migrate: migrateOnly,
    start,
    main: () =>
      runService(def.name, () => loadConfigFor(), (config, logger) =>
        config.HALO_MIGRATE_ONLY ? migrateOnly(config, logger) : start(config, logger),
      ),
  };
}
