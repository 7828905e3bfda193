import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { resolve } from 'node:path';
import type { BaseContext } from '@apollo/server';
import type { Express } from 'express';
import { parse } from 'graphql';
import type { z } from '../config/config';
import type { Db } from '../db/db';
import type { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import { refuseNulArguments, refuseNulInput } from '../http/nul';
import { enforceDeclaredScopes } from '../auth/scopes';
import { serviceIdentityFor } from '../auth/service-identity';
import { createMetrics, type ServiceMetrics } from '../metrics/metrics';
import { NotReady } from '../http/http';
import { formatGraphQLError } from '../graphql/graphql';
import { leanGraphql, type LeanGraphql } from '../graphql/graphql-lean';
import type { RunningService, ServiceDefinition, ServiceParts } from './definition';
import { openPeers, type PeerClients, type PeerDefinitions } from './peers';
import { publishAfterStart, serviceContractOf } from './publish';
import {
  createHttpApp,
  openServiceDb,
  serveService,
  startSubgraph,
  subgraphContext,
  subgraphMiddleware,
  withLifecycle,
  type SubgraphSubscriptions,
} from './service';
import type { KitConfig } from './service-config';

/**
 * A defined service, started: its database (migrated), its domain (and demo data), the HTTP app
 * with its subgraph and REST routes, its gRPC services; then, if asked, its contract published.
 * Whatever was opened before a failure is closed again (withLifecycle).
 */
export function startService<X extends z.ZodRawShape, C extends KitConfig, D, P extends PeerDefinitions>(
  def: ServiceDefinition<X, C, D, P>,
  config: C,
  logger: Logger,
  opts: { db?: Db | undefined } = {},
): Promise<RunningService<D>> {
  return withLifecycle(logger, config.SHUTDOWN_TIMEOUT_MS, async (lifecycle) => {
    const parts = await openParts(def, config, logger, lifecycle, opts.db);
    const domain = await def.domain(parts);
    if (config.SEED_DEMO_DATA && def.seed) await def.seed({ ...parts, domain });

    const { db, identity, metrics } = parts;
    const readiness = serviceReadiness(db, def.ready, domain);
    const app = createHttpApp({ logger, lifecycle, ready: readiness.ready, bodyLimit: config.BODY_LIMIT, metrics });
    def.configureHttp?.(app, config, identity);
    const { lean, subscriptions } = await mountSubgraph(def, app, domain, parts);
    // The NUL rule for every REST route (query and body; path parameters in validateRestInput).
    if (def.rest) app.use(refuseNulInput(), def.rest(domain, config));

    const grpcServices = def.grpc?.(domain, logger) ?? [];
    const served = await serveService({ app, lean, grpcServices, identity, metrics, config, lifecycle, logger, db, subscriptions });
    if (config.REGISTRY_PUBLISH_ON_START) {
      const contract = serviceContractOf(def, config, served.httpPort);
      publishAfterStart({ contract, config, logger, identity, lifecycle, refused: readiness.refuse });
    }
    return { ...served, domain };
  });
}

/** What the service's own code builds its domain from: identity, the migrated database, metrics, its peers' clients. */
async function openParts<X extends z.ZodRawShape, C extends KitConfig, D, P extends PeerDefinitions>(
  def: ServiceDefinition<X, C, D, P>,
  config: C,
  logger: Logger,
  lifecycle: Lifecycle,
  given: Db | undefined,
): Promise<ServiceParts<C, PeerClients<P>>> {
  const identity = serviceIdentityFor(def.name, config);
  const migrationsDir = resolve(def.root, 'migrations');
  const db = await openServiceDb(def.name, config, { logger, lifecycle, migrationsDir, given });
  const metrics = createMetrics(def.name);
  metrics.watchDb(db);
  const peers = openPeers(def.peers, { config, identity, logger, metrics, lifecycle });
  return { db, identity, metrics, config, logger, lifecycle, peers };
}

/**
 * `/readyz`: the database answers and the service's own check passes — unless the registry
 * refused the contract published at start (`refuse`), which no retry of these fixes.
 */
function serviceReadiness<D>(
  db: Db,
  extraReady: ((domain: D) => Promise<void>) | undefined,
  domain: D,
): { ready: () => Promise<void>; refuse: (why: string) => void } {
  let refusal: string | null = null;
  return {
    ready: async () => {
      if (refusal !== null) throw new NotReady(refusal);
      await db.ping();
      if (extraReady) await extraReady(domain);
    },
    refuse: (why) => {
      refusal = why;
    },
  };
}

/**
 * The subgraph, when the service has one: Apollo Server under express's `/graphql`, the lean path
 * in front of it (ADR 0015) unless `GRAPHQL_LEAN=false`, and the Subscription type over WebSocket.
 */
async function mountSubgraph<X extends z.ZodRawShape, C extends KitConfig, D, P extends PeerDefinitions>(
  def: ServiceDefinition<X, C, D, P>,
  app: Express,
  domain: D,
  { config, logger, lifecycle, metrics }: { config: C; logger: Logger; lifecycle: Lifecycle; metrics: ServiceMetrics },
): Promise<{ lean?: LeanGraphql | undefined; subscriptions?: SubgraphSubscriptions | undefined }> {
  if (!def.graphql) return {};
  const typeDefs = parse(readFileSync(resolve(def.root, 'schema.graphql'), 'utf8'));
  // Before both servers are built from it, so HTTP and WebSocket operations alike refuse NUL
  // and keep API keys within the scopes the SDL declares (`@requiresScopes`).
  const schema = refuseNulArguments(enforceDeclaredScopes(def.graphql.schema(typeDefs, domain), typeDefs));
  const apollo = await startSubgraph<BaseContext>({ schema, logger, lifecycle });
  const context = def.graphql.context;
  const extra = (req: IncomingMessage) => (context ? context(domain, req) : {});
  app.use('/graphql', subgraphMiddleware(apollo, config.JWT_SECRET, extra));
  let lean: LeanGraphql | undefined;
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
  const subscriptions =
    (def.graphql.subscriptions ?? schema.getSubscriptionType() != null)
      ? { schema, context: extra, jwtSecret: config.JWT_SECRET, maxPayload: config.BODY_LIMIT }
      : undefined;
  return { lean, subscriptions };
}
