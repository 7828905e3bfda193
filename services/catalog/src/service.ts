import { resolve } from 'node:path';
import { defineService } from '@halo/kit/service';
import { seedDemoData } from './db/seed';
import { CatalogStore } from './db/store';
import { Catalog } from './domain/catalog';
import { createLoaders } from './graphql/loaders';
import { catalogSchema } from './graphql/resolvers';
import { productServiceBinding } from './grpc/server/product-service';
import { restManifest } from './rest/manifest';
import { restRoutes } from './rest/routes';

/** Products: REST (v1 and v2), the GraphQL subgraph and the gRPC ProductService over one domain. */
export const catalogService = defineService({
  name: 'catalog',
  root: resolve(__dirname, '..'),
  domain: ({ db }) => new Catalog(new CatalogStore(db)),
  seed: ({ db, logger }) => seedDemoData(db, logger),
  graphql: { schema: catalogSchema, context: (catalog) => ({ loaders: createLoaders(catalog) }) },
  restManifest,
  rest: (catalog, config) => restRoutes(catalog, config.JWT_SECRET),
  grpc: (catalog, logger) => [productServiceBinding(catalog, logger)],
});

export type CatalogService = Awaited<ReturnType<typeof catalogService.start>>;
