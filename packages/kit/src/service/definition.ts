import type { IncomingMessage } from 'node:http';
import type { Express, RequestHandler } from 'express';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { z } from '../config/config';
import type { ServiceName } from '../config/topology';
import type { Db } from '../db/db';
import type { GrpcServiceBinding } from '../grpc/grpc';
import type { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import type { ServiceIdentity } from '../auth/service-identity';
import type { ServiceMetrics } from '../metrics/metrics';
import type { ServiceContract } from '../contract/contract';
import type { RestManifest } from '../rest/rest-manifest';
import type { StartedService } from './service';
import type { PeerClients, PeerDefinitions } from './peers';
import type { Env, KitConfig, ServiceConfig } from './service-config';

/** What a service's own code gets to build its domain (and, with the domain, to seed). */
export interface ServiceParts<C, P extends object = Record<never, never>> {
  db: Db;
  /** This service's identity: pass it (with the callee's name) to gRPC clients as `auth`. */
  identity: ServiceIdentity;
  /** This process's Prometheus registry (`/metrics`): add the service's own counters to it. */
  metrics: ServiceMetrics;
  config: C;
  logger: Logger;
  /** Register anything the domain opens (clients, timers) here; it is closed in reverse on shutdown. */
  lifecycle: Lifecycle;
  /** The clients of the Halo services it calls, made from `peers` (closed by the kit on shutdown). */
  peers: P;
}

/**
 * Everything that differs between two Halo services; the kit does the rest (config, database and
 * migrations, seed, HTTP app with health and request context, the subgraph and its schema file,
 * gRPC with health, graceful shutdown). See docs/adding-a-service.md.
 */
export interface ServiceDefinition<X extends z.ZodRawShape, C extends KitConfig, D, P extends PeerDefinitions = Record<never, never>> {
  /** The one short name (a key of `SERVICES`): schema, logger, ports, proto package. */
  name: ServiceName;
  /** The service's folder; the kit reads `migrations/` and `schema.graphql` from it. */
  root: string;
  /** The service's own variables, validated with the kit's (`env.*` helpers, `z`). */
  config?: X;
  /** Rules across variables and derived settings, after validation; throw `ConfigError` naming the variable. */
  refineConfig?: (config: ServiceConfig<X>, source: Env) => C;
  /**
   * The Halo services it calls over gRPC, by name: each a `service` (its `<PEER>_GRPC_ADDR` is
   * one of the service's settings) and the `client` made over the kit's `PeerChannel` (deadline,
   * identity, retries and breaker). Built before the domain, handed to it as `peers`, closed on shutdown.
   */
  peers?: P;
  /** Builds the domain — the one way in for every transport — and whatever the adapters need beside it. */
  domain: (parts: ServiceParts<C, PeerClients<P>>) => D | Promise<D>;
  /** Demo data, after migrations, only when SEED_DEMO_DATA is on. Idempotent. */
  seed?: (parts: ServiceParts<C, PeerClients<P>> & { domain: D }) => Promise<void>;
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
