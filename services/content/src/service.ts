import { resolve } from 'node:path';
import { defineService } from '@halo/kit/service';
import { seedDemoData } from './db/seed';
import { ContentStore } from './db/store';
import { Content } from './domain/content';
import { createLoaders } from './graphql/loaders';
import { contentSchema } from './graphql/resolvers';
import { userServiceBinding } from './grpc/server/user-service';
import { restManifest } from './rest/manifest';
import { restRoutes } from './rest/routes';

/** Users, posts and comments: REST, the GraphQL subgraph and the gRPC UserService over one domain. */
export const contentService = defineService({
  name: 'content',
  root: resolve(__dirname, '..'),
  domain: ({ db }) => new Content(new ContentStore(db)),
  seed: ({ db, logger }) => seedDemoData(db, logger),
  graphql: { schema: contentSchema, context: (content) => ({ loaders: createLoaders(content) }) },
  restManifest,
  rest: (content) => restRoutes(content),
  grpc: (content, logger) => [userServiceBinding(content, logger)],
});

export type ContentService = Awaited<ReturnType<typeof contentService.start>>;
