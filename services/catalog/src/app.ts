import { resolve } from 'node:path';
import {
  createHttpApp,
  openServiceDb,
  serveService,
  startSubgraph,
  subgraphMiddleware,
  withLifecycle,
  type Db,
  type Logger,
  type StartedService,
} from '@halo/kit';
import type { CatalogConfig } from './config';
import { seedDemoData } from './db/seed';
import { CatalogStore } from './db/store';
import { Catalog } from './domain/catalog';
import { createLoaders } from './graphql/loaders';
import { catalogSchema, type GraphQLContext } from './graphql/resolvers';
import { productServiceBinding } from './grpc/product-service';
import { restRoutes } from './rest/routes';

export const SERVICE_NAME = 'catalog';
export const MIGRATIONS_DIR = resolve(__dirname, '../migrations');

export type CatalogService = StartedService;

/**
 * Wires the catalog service: database (+ migrations, + demo seed in dev), the domain, and its
 * three adapters — REST (v1 and v2), the GraphQL subgraph and the gRPC ProductService — then
 * starts serving. Pass `db` to reuse an open database (tests give each file its own schema).
 */
export function startCatalogService(config: CatalogConfig, logger: Logger, opts: { db?: Db } = {}): Promise<CatalogService> {
  return withLifecycle(logger, config.SHUTDOWN_TIMEOUT_MS, async (lifecycle) => {
    const db = await openServiceDb(SERVICE_NAME, config, { logger, lifecycle, migrationsDir: MIGRATIONS_DIR, given: opts.db });
    if (config.SEED_DEMO_DATA) await seedDemoData(db, logger);

    const store = new CatalogStore(db);
    const catalog = new Catalog(store);

    const apollo = await startSubgraph<GraphQLContext>({ schema: catalogSchema(catalog), logger, lifecycle });
    const app = createHttpApp({ logger, lifecycle, ready: () => db.ping(), bodyLimit: config.BODY_LIMIT });
    app.use('/graphql', subgraphMiddleware(apollo, config.JWT_SECRET, () => ({ loaders: createLoaders(store) })));
    app.use(restRoutes(catalog, config.JWT_SECRET));

    return serveService({ app, grpcServices: [productServiceBinding(catalog, logger)], config, lifecycle, logger, db });
  });
}
