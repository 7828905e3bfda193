import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import type { BaseContext } from '@apollo/server';
import type { Express, RequestHandler } from 'express';
import { parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import { ConfigError, env, loadConfig, serviceConfigShape, type z } from '../config/config';
import type { Db } from '../db/db';
import type { GrpcServiceBinding } from '../grpc/grpc';
import { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import { refuseDevSecrets } from '../config/dev-secrets';
import { refuseNulArguments, refuseNulInput } from '../http/nul';
import { enforceDeclaredScopes } from '../auth/scopes';
import { ServiceIdentity, serviceIdentityFor } from '../auth/service-identity';
import { createMetrics, type ServiceMetrics } from '../metrics/metrics';
import { PublishError, publishContract, serviceContract, type ServiceContract } from '../contract/contract';
import type { RestManifest } from '../rest/rest-manifest';
import {
  createHttpApp,
  openServiceDb,
  serveService,
  startSubgraph,
  subgraphContext,
  subgraphMiddleware,
  withLifecycle,
  type StartedService,
  type SubgraphSubscriptions,
} from './service';
import { runService } from '../process/run';
import { NotReady } from '../http/http';
import { formatGraphQLError } from '../graphql/graphql';
import { leanGraphql, type LeanGraphql } from '../graphql/graphql-lean';
import { preloadServiceLibraries } from '../process/lazy';
import { SERVICES, type ServiceName } from '../config/topology';

type Env = Record<string, string | undefined>;

/** What the kit reads for every service: the shared variables plus the demo-seed switch. */
export function kitConfigShape(name: ServiceName) {
  return {
    ...serviceConfigShape(SERVICES[name]),
    SEED_DEMO_DATA: env
      .flag()
      .describe(
        "seed the service's demo data (content: users, posts and comments; auth: their passwords; catalog: 42 products); " +
          'idempotent; unset: on only when `HALO_ENV=development`; refused when `HALO_ENV=production`',
      ),
    HALO_MIGRATE_ONLY: env
      .flag()
      .describe("apply the service's migrations and exit 0 without serving (the chart's migration Job); exit 1 if they fail"),
    REGISTRY_URL: env
      .url()
      .describe(
        "the schema registry's HTTP base, where the service publishes its contract ([docs/registry.md](docs/registry.md)); " +
          '`npm start` sets it',
      ),
    SERVICE_PUBLIC_URL: env
      .url()
      .describe(
        "the routing URL the service publishes with its contract; unset: `http://127.0.0.1:<HTTP_PORT>` (the chart sets the Service's cluster DNS name)",
      ),
    REGISTRY_PUBLISH_ON_START: env
      .flag()
      .describe('publish the contract after start (needs `REGISTRY_URL`); `npm start` sets it; refused when `HALO_ENV=production`'),
    HALO_PUBLISH_CONTRACT_ONLY: env
      .flag()
      .describe(
        'publish the contract and exit without serving: 0 published, 1 refused, 3 registry unreachable, 78 a configuration ' +
          "that can never start (the chart's post-install/post-upgrade hook); needs `REGISTRY_URL` and `SERVICE_SIGNING_KEY`, reads nothing else " +
          'of the service (no database, secret or peer)',
      ),
    REGISTRY_PUBLISH_ACKNOWLEDGE: env
      .reason()
      .describe("the reason a publish lets breaking changes through with (the registry records it; the chart's `publish.acknowledge`)"),
    GRAPHQL_LEAN: env
      .bool(true)
      .describe(
        '`false`: every `/graphql` request of a subgraph goes through express and Apollo Server, as before the lean path ' +
          '([ADR 0015](docs/adr/0015-lean-subgraph-path.md)); the answers are the same either way',
      ),
  };
}

/** The variables a service reads: the kit's and the service's own (`X`, which wins on a shared name). */
export function serviceShape<X extends z.ZodRawShape = Record<never, never>>(name: ServiceName, extra?: X) {
  return { ...kitConfigShape(name), ...extra } as KitShape & X;
}

type KitShape = ReturnType<typeof kitConfigShape>;

/** The settings the kit itself reads, SEED_DEMO_DATA resolved to a boolean. */
export type KitConfig = Omit<z.infer<z.ZodObject<KitShape>>, 'SEED_DEMO_DATA'> & { SEED_DEMO_DATA: boolean };

/** A service's settings: the kit's and the service's own shape `X`. */
export type ServiceConfig<X extends z.ZodRawShape = Record<never, never>> = KitConfig & z.infer<z.ZodObject<X>>;

/** Loads and validates a service's settings once; the demo-seed rule lives here and nowhere else. */
export function loadServiceConfig<X extends z.ZodRawShape = Record<never, never>>(
  name: ServiceName,
  extra?: X,
  source: Env = process.env,
): ServiceConfig<X> {
  const loaded = loadConfig(serviceShape(name, extra), source);
  const seed = (loaded as { SEED_DEMO_DATA?: boolean }).SEED_DEMO_DATA;
  const haloEnv = (loaded as { HALO_ENV: string }).HALO_ENV;
  refuseDevSecrets(source, haloEnv);
  if (seed && haloEnv === 'production') {
    throw new ConfigError('Invalid configuration: SEED_DEMO_DATA: demo data is never seeded when HALO_ENV=production');
  }
  const registry = loaded as { REGISTRY_URL?: string; REGISTRY_PUBLISH_ON_START?: boolean; HALO_PUBLISH_CONTRACT_ONLY?: boolean };
  // In a cluster a contract is published once the release is ready (the Helm hook), never by every replica at start.
  if (registry.REGISTRY_PUBLISH_ON_START && haloEnv === 'production') {
    throw new ConfigError(
      'Invalid configuration: REGISTRY_PUBLISH_ON_START: refused when HALO_ENV=production (the release hook publishes, HALO_PUBLISH_CONTRACT_ONLY)',
    );
  }
  if (registry.HALO_PUBLISH_CONTRACT_ONLY) requireRegistryUrl(registry.REGISTRY_URL, 'HALO_PUBLISH_CONTRACT_ONLY');
  else if (registry.REGISTRY_PUBLISH_ON_START) requireRegistryUrl(registry.REGISTRY_URL, 'REGISTRY_PUBLISH_ON_START');
  return { ...loaded, SEED_DEMO_DATA: seed ?? haloEnv === 'development' } as unknown as ServiceConfig<X>;
}

/**
 * What HALO_PUBLISH_CONTRACT_ONLY (the Helm chart's publish hook) reads, and nothing more: where
 * the registry is, the URL to publish, the key that signs the publish. The hook's pod gets no
 * database credentials, JWT secret, Redis or peer addresses, so none is required here.
 */
export function publishConfigShape(name: ServiceName) {
  const kit = kitConfigShape(name);
  return {
    HALO_ENV: kit.HALO_ENV,
    HTTP_PORT: kit.HTTP_PORT,
    LOG_LEVEL: kit.LOG_LEVEL,
    SHUTDOWN_TIMEOUT_MS: kit.SHUTDOWN_TIMEOUT_MS,
    SERVICE_SIGNING_KEY: kit.SERVICE_SIGNING_KEY,
    REGISTRY_URL: kit.REGISTRY_URL,
    SERVICE_PUBLIC_URL: kit.SERVICE_PUBLIC_URL,
    HALO_PUBLISH_CONTRACT_ONLY: kit.HALO_PUBLISH_CONTRACT_ONLY,
    REGISTRY_PUBLISH_ACKNOWLEDGE: kit.REGISTRY_PUBLISH_ACKNOWLEDGE,
  };
}

export type PublishConfig = z.infer<z.ZodObject<ReturnType<typeof publishConfigShape>>>;

/** Whether `source` asks for the publish hook (HALO_PUBLISH_CONTRACT_ONLY, read as the flag it is). */
export function publishOnlyRequested(source: Env = process.env): boolean {
  return loadConfig({ HALO_PUBLISH_CONTRACT_ONLY: env.flag() }, source).HALO_PUBLISH_CONTRACT_ONLY === true;
}

const safely = (read: () => boolean): boolean => {
  try {
    return read();
  } catch {
    return false;
  }
};

/** The publish hook's settings (publishConfigShape); the same refusals as a serving process's. */
export function loadPublishConfig(name: ServiceName, source: Env = process.env): PublishConfig {
  const loaded = loadConfig(publishConfigShape(name), source);
  refuseDevSecrets(source, loaded.HALO_ENV);
  requireRegistryUrl(loaded.REGISTRY_URL, 'HALO_PUBLISH_CONTRACT_ONLY');
  return loaded;
}

/** Publishing (at start or as the hook) needs to know where the registry is. */
function requireRegistryUrl(url: string | undefined, publishedBy: 'HALO_PUBLISH_CONTRACT_ONLY' | 'REGISTRY_PUBLISH_ON_START'): void {
  if (!url) throw new ConfigError(`Invalid configuration: REGISTRY_URL: is required with ${publishedBy}`);
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
  /**
   * Express settings and middleware the routes rely on (e.g. `trust proxy`), before any route;
   * `identity` verifies a caller's service token (auth believes the gateway's forwarded headers by it).
   */
  configureHttp?: (app: Express, config: C, identity: ServiceIdentity) => void;
  /**
   * The subgraph: its schema from `<root>/schema.graphql` (build it with @apollo/subgraph) and
   * per-request context. A schema with a Subscription type is also served over WebSocket
   * (graphql-ws, `/graphql` on the HTTP port; kit/src/graphql/subscriptions.ts).
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
  /** The public REST routes' declaration (`src/rest/manifest.ts`): the REST part of the service's contract. */
  restManifest?: RestManifest;
  /** gRPC services (the kit adds grpc.health.v1). */
  grpc?: (domain: D, logger: Logger) => GrpcServiceBinding[];
}

export interface RunningService<D> extends StartedService {
  domain: D;
}

export interface DefinedService<C, D> {
  readonly name: ServiceName;
  readonly migrationsDir: string;
  /** Every variable `loadConfig` validates (the kit's and the service's own): docs/configuration.md is generated from it. */
  readonly configShape: z.ZodRawShape;
  loadConfig(source?: Env): C;
  /** Applies the service's migrations with its own settings and closes the connection (HALO_MIGRATE_ONLY). */
  migrate(config: C, logger: Logger): Promise<void>;
  /** Starts the service; a `db` given (tests: a throwaway schema) is migrated but not closed by it. */
  start(config: C, logger: Logger, opts?: { db?: Db | undefined }): Promise<RunningService<D>>;
  /** The service's contract (docs/registry.md): its subgraph, its REST part, its routing URL; null when it has neither. */
  contract(config: Pick<KitConfig, 'SERVICE_PUBLIC_URL' | 'HTTP_PORT'>, httpPort?: number): ServiceContract | null;
  /**
   * The process entry point: config (one line and exit 1 when bad), start, signals; with
   * HALO_MIGRATE_ONLY, migrate and exit; with HALO_PUBLISH_CONTRACT_ONLY, publish and exit.
   */
  main(): Promise<void>;
}

/** Publishing at start waits for the registry this long at most (it may start beside the service). */
/** A publish refusal in one line: the registry's answer, then the check's errors and notes. */
function refusalOf(err: PublishError): string {
  const report = (
    err.body as { report?: { notes?: string[]; composition?: { errors?: string[] }; rest?: { errors?: string[] } } } | undefined
  )?.report;
  const why = [...(report?.composition?.errors ?? []), ...(report?.rest?.errors ?? []), ...(report?.notes ?? [])].join('; ');
  return `${err.message}${why ? ` — ${why}` : ''}`;
}

const PUBLISH_RETRY_MS = { first: 250, max: 5_000, giveUpAfter: 120_000 };

// eslint-disable-next-line max-lines-per-function -- one closure over the definition, shared by migrate, start and main; to split (issue 26)
export function defineService<X extends z.ZodRawShape = Record<never, never>, C extends KitConfig = ServiceConfig<X>, D = unknown>(
  def: ServiceDefinition<X, C, D>,
): DefinedService<C, D> {
  const migrationsDir = resolve(def.root, 'migrations');

  const loadConfigFor = (source: Env = process.env): C => {
    const config = loadServiceConfig(def.name, def.config, source);
    return def.refineConfig ? def.refineConfig(config, source) : (config as unknown as C);
  };

  const contract = (config: Pick<KitConfig, 'SERVICE_PUBLIC_URL' | 'HTTP_PORT'>, httpPort?: number): ServiceContract | null => {
    if (!def.graphql && !def.restManifest) return null;
    return serviceContract({
      service: def.name,
      url: config.SERVICE_PUBLIC_URL ?? `http://127.0.0.1:${httpPort ?? config.HTTP_PORT}`,
      sdl: def.graphql ? readFileSync(resolve(def.root, 'schema.graphql'), 'utf8') : null,
      manifest: def.restManifest,
    });
  };

  /**
   * Publishes after start without delaying it: retried with backoff while the registry is
   * unreachable (under `npm start` it boots beside the services), given up when refused.
   */
  const publishAfterStart = (
    config: C,
    logger: Logger,
    identity: ServiceIdentity,
    lifecycle: Lifecycle,
    httpPort: number,
    refused: (why: string) => void,
  ) => {
    const c = contract(config, httpPort);
    if (!c || !config.REGISTRY_URL) return;
    const registryUrl = config.REGISTRY_URL;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    lifecycle.register('contract publish', () => {
      stopped = true;
      clearTimeout(timer);
    });
    const started = Date.now();
    const attempt = async (delay: number): Promise<void> => {
      if (stopped) return;
      try {
        const acknowledge = (config as { REGISTRY_PUBLISH_ACKNOWLEDGE?: string }).REGISTRY_PUBLISH_ACKNOWLEDGE;
        const { body } = await publishContract(c, { registryUrl, identity, ...(acknowledge ? { acknowledge } : {}) });
        logger.info(
          { version: body.version, composition: body.composition, unchanged: body.unchanged ?? false },
          'contract published to the registry',
        );
      } catch (err) {
        if (err instanceof PublishError && err.kind === 'unreachable' && Date.now() - started < PUBLISH_RETRY_MS.giveUpAfter) {
          timer = setTimeout(() => void attempt(Math.min(delay * 2, PUBLISH_RETRY_MS.max)), delay);
          timer.unref();
          return;
        }
        logger.error({ err: (err as Error).message, report: err instanceof PublishError ? err.body : undefined }, 'contract not published');
        // Refused by the check: the gateways keep the previous contract, which this process no
        // longer serves as published; not ready until that is fixed (an unreachable registry is not this service's fault).
        if (err instanceof PublishError && err.kind === 'refused') refused(`contract refused by the registry: ${refusalOf(err)}`);
      }
    };
    void attempt(PUBLISH_RETRY_MS.first);
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
      let refusal: string | null = null;
      const ready = async () => {
        if (refusal !== null) throw new NotReady(refusal);
        await db.ping();
        if (extraReady) await extraReady(domain);
      };
      const app = createHttpApp({ logger, lifecycle, ready, bodyLimit: config.BODY_LIMIT, metrics });
      def.configureHttp?.(app, config, identity);
      let subscriptions: SubgraphSubscriptions | undefined;
      let lean: LeanGraphql | undefined;
      if (def.graphql) {
        const typeDefs = parse(readFileSync(resolve(def.root, 'schema.graphql'), 'utf8'));
        // Before both servers are built from it, so HTTP and WebSocket operations alike refuse NUL
        // and keep API keys within the scopes the SDL declares (`@requiresScopes`).
        const schema = refuseNulArguments(enforceDeclaredScopes(def.graphql.schema(typeDefs, domain), typeDefs));
        const apollo = await startSubgraph<BaseContext>({ schema, logger, lifecycle });
        const context = def.graphql.context;
        const extra = (req: IncomingMessage) => (context ? context(domain, req) : {});
        app.use('/graphql', subgraphMiddleware(apollo, config.JWT_SECRET, extra));
        if (config.GRAPHQL_LEAN !== false) {
          lean = leanGraphql<BaseContext>({
            apollo,
            schema,
            context: subgraphContext<BaseContext>(config.JWT_SECRET, extra) as (req: IncomingMessage) => Promise<BaseContext>,
            formatError: formatGraphQLError(logger),
            logger,
            metrics,
            bodyLimit: config.BODY_LIMIT,
          });
        }
        if (def.graphql.subscriptions ?? schema.getSubscriptionType() != null) {
          subscriptions = { schema, context: extra, jwtSecret: config.JWT_SECRET, maxPayload: config.BODY_LIMIT };
        }
      }
      // The NUL rule for every REST route (query and body; path parameters in validateRestInput).
      if (def.rest) app.use(refuseNulInput(), def.rest(domain, config));

      const grpcServices = def.grpc?.(domain, logger) ?? [];
      const served = await serveService({ app, lean, grpcServices, identity, metrics, config, lifecycle, logger, db, subscriptions });
      if (config.REGISTRY_PUBLISH_ON_START) {
        publishAfterStart(config, logger, identity, lifecycle, served.httpPort, (why) => (refusal = why));
      }
      return { ...served, domain };
    });

  /** HALO_PUBLISH_CONTRACT_ONLY: one publish, then exit 0; refused (1) or unreachable (3) with one line. */
  const publishOnly = async (config: PublishConfig): Promise<void> => {
    const c = contract(config);
    if (!c) {
      process.stdout.write(`${def.name}: no contract to publish (no subgraph, no REST routes)\n`);
      return;
    }
    const identity = ServiceIdentity.fromConfig(def.name, config);
    if (!identity.canCall)
      throw new ConfigError(
        'Invalid configuration: SERVICE_SIGNING_KEY: is required to publish the contract (its token authenticates the service to the registry)',
      );
    try {
      const { body } = await publishContract(c, {
        registryUrl: config.REGISTRY_URL!,
        identity,
        ...(config.REGISTRY_PUBLISH_ACKNOWLEDGE ? { acknowledge: config.REGISTRY_PUBLISH_ACKNOWLEDGE } : {}),
      });
      process.stdout.write(
        `${def.name}: contract ${body.unchanged ? 'unchanged at' : 'published as'} version ${body.version} (composition ${body.composition})\n`,
      );
    } catch (err) {
      if (!(err instanceof PublishError)) throw err;
      process.stderr.write(`${def.name}: contract not published: ${refusalOf(err)}\n`);
      process.exitCode = err.kind === 'unreachable' ? 3 : 1;
    }
  };

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
    configShape: serviceShape(def.name, def.config),
    loadConfig: loadConfigFor,
    migrate: migrateOnly,
    start,
    contract,
    main: () => {
      // The publish hook reads its own few settings: it is given no database, secret or peer. (A
      // flag that does not parse is reported, one line, by the full configuration below.)
      if (safely(publishOnlyRequested))
        return runService(
          def.name,
          () => loadPublishConfig(def.name),
          (config) => publishOnly(config),
        );
      // Every service serves HTTP, GraphQL and SQL: load those now, while the launcher may still be
      // starting the database (late-env.ts), rather than on first use after it.
      preloadServiceLibraries();
      return runService(
        def.name,
        () => loadConfigFor(),
        (config, logger) => (config.HALO_MIGRATE_ONLY ? migrateOnly(config, logger) : start(config, logger)),
      );
    },
  };
}
