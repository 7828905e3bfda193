import { resolve } from 'node:path';
import { ApolloServer } from '@apollo/server';
import { expressMiddleware } from '@as-integrations/express5';
import {
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import {
  createHttpApp,
  finishHttpApp,
  formatGraphQLError,
  graphqlCaller,
  Lifecycle,
  migrate,
  openDb,
  serveHttp,
  startGrpcServer,
  type Db,
  type Logger,
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

export interface ContentService {
  lifecycle: Lifecycle;
  db: Db;
  httpPort: number;
  grpcPort: number;
  stop(): Promise<void>;
}

/**
 * Wires the content service: database (+ migrations, + demo seed in dev), the domain, and its
 * three adapters — REST, the GraphQL subgraph and the gRPC UserService — then starts serving.
 * Pass `db` to reuse an open database (tests give each file its own throwaway schema).
 */
export async function startContentService(
  config: ContentConfig,
  logger: Logger,
  opts: { db?: Db } = {},
): Promise<ContentService> {
  const lifecycle = new Lifecycle(logger);
  try {
    const db =
      opts.db ??
      (await openDb({
        url: config.DATABASE_URL,
        dataDir: config.DATA_DIR ?? resolve('.data', SERVICE_NAME),
        schema: config.DB_SCHEMA ?? SERVICE_NAME,
        poolSize: config.DB_POOL_SIZE,
        logger,
      }));
    if (!opts.db) lifecycle.register('database', () => db.close());
    await migrate(db, MIGRATIONS_DIR, logger);
    if (config.SEED_DEMO_DATA) await seedDemoData(db, logger);

    const store = new ContentStore(db);
    const content = new Content(store);

    const apollo = new ApolloServer<GraphQLContext>({
      schema: contentSchema(content),
      formatError: formatGraphQLError(logger),
      // Halo reports nothing to Apollo's servers, and federated tracing (ftv1) is off on the hot path.
      plugins: [
        ApolloServerPluginUsageReportingDisabled(),
        ApolloServerPluginSchemaReportingDisabled(),
        ApolloServerPluginInlineTraceDisabled(),
      ],
    });
    await apollo.start();
    lifecycle.register('graphql', () => apollo.stop());

    const app = createHttpApp({ logger, lifecycle, ready: () => db.ping(), bodyLimit: config.BODY_LIMIT });
    app.use(
      '/graphql',
      expressMiddleware(apollo, {
        context: async ({ req }) => ({
          requestId: req.id,
          caller: graphqlCaller(req.headers.authorization, config.JWT_SECRET),
          loaders: createLoaders(store),
        }),
      }),
    );
    app.use(restRoutes(content));
    finishHttpApp(app);

    const grpcServer = await startGrpcServer({
      port: config.GRPC_PORT,
      services: [userServiceBinding(content, logger)],
      logger,
    });
    lifecycle.register('grpc server', () => grpcServer.shutdown(config.SHUTDOWN_TIMEOUT_MS));
    const { port } = await serveHttp(app, {
      port: config.HTTP_PORT,
      host: config.HTTP_HOST,
      lifecycle,
      logger,
      drainMs: config.SHUTDOWN_TIMEOUT_MS,
    });
    return {
      lifecycle,
      db,
      httpPort: port,
      grpcPort: grpcServer.port,
      stop: () => lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS),
    };
  } catch (err) {
    await lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS);
    throw err;
  }
}
