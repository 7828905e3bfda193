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
import type { ContentConfig } from './config';
import { seedDemoData } from './db/seed';
import { ContentStore } from './db/store';
import { Content } from './domain/content';
import { createLoaders } from './graphql/loaders';
import { contentSchema, type GraphQLContext } from './graphql/resolvers';
import { userServiceBinding } from './grpc/user-service';
import { restRoutes } from './rest/routes';

export const SERVICE_NAME = 'content';
export const MIGRATIONS_DIR = resolve(__dirname, '../migrations');

export type ContentService = StartedService;

/**
 * Wires the content service: database (+ migrations, + demo seed in dev), the domain, and its
 * three adapters — REST, the GraphQL subgraph and the gRPC UserService — then starts serving.
 * Pass `db` to reuse an open database (tests give each file its own throwaway schema).
 */
export function startContentService(config: ContentConfig, logger: Logger, opts: { db?: Db } = {}): Promise<ContentService> {
  return withLifecycle(logger, config.SHUTDOWN_TIMEOUT_MS, async (lifecycle) => {
    const db = await openServiceDb(SERVICE_NAME, config, { logger, lifecycle, migrationsDir: MIGRATIONS_DIR, given: opts.db });
    if (config.SEED_DEMO_DATA) await seedDemoData(db, logger);

    const store = new ContentStore(db);
    const content = new Content(store);

    const apollo = await startSubgraph<GraphQLContext>({ schema: contentSchema(content), logger, lifecycle });
    const app = createHttpApp({ logger, lifecycle, ready: () => db.ping(), bodyLimit: config.BODY_LIMIT });
    app.use('/graphql', subgraphMiddleware(apollo, config.JWT_SECRET, () => ({ loaders: createLoaders(store) })));
    app.use(restRoutes(content));

    return serveService({ app, grpcServices: [userServiceBinding(content, logger)], config, lifecycle, logger, db });
  });
}
