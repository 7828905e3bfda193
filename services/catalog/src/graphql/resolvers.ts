import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Caller } from '@halo/kit/auth';
import { parseId } from '@halo/kit/domain';
import { found } from '@halo/kit/errors';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Catalog } from '../domain/catalog';
import type { Order, Product, SortKey } from '../domain/model';
import { centsToPrice } from '../domain/rules';
import type { Loaders } from './loaders';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
  loaders: Loaders;
}

/** GraphQL enum values → the domain's (REST's) sort and order names. */
const SORT: Record<string, SortKey> = { ID: 'id', NAME: 'name', PRICE: 'price', CREATED_AT: 'created_at' };
const ORDER: Record<string, Order> = { ASC: 'asc', DESC: 'desc' };

interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  category?: string | null;
}

interface ProductsArgs {
  page?: number | null;
  limit?: number | null;
  category?: string | null;
  sort?: string | null;
  order?: string | null;
}

/**
 * The subgraph over the domain: lists and writes call use cases (authorisation is theirs), single
 * products go through the request's loader (a domain batch method) with the domain's not-found rule.
 */
export function catalogSchema(typeDefs: DocumentNode, catalog: Catalog): GraphQLSchema {
  const resolvers = {
    Query: {
      products: async (_: unknown, args: ProductsArgs, ctx: GraphQLContext) => {
        const page = await catalog.listProducts({
          page: args.page,
          limit: args.limit,
          category: args.category,
          sort: args.sort ? SORT[args.sort] : null,
          order: args.order ? ORDER[args.order] : null,
        });
        ctx.loaders.primeProducts(page.data);
        return page;
      },
      productConnection: async (_: unknown, args: ConnectionArgs, ctx: GraphQLContext) => {
        const conn = await catalog.productConnection(args);
        ctx.loaders.primeProducts(conn.edges.map((e) => e.node));
        return conn;
      },
      product: (_: unknown, args: { id: string }, ctx: GraphQLContext) => ctx.loaders.productById.load(parseId(args.id)).then(found),
    },
    Mutation: {
      createProduct: (_: unknown, args: { input: unknown }, ctx: GraphQLContext) => catalog.createProduct(ctx.caller, args.input),
      updateProduct: (_: unknown, args: { id: string; input: unknown }, ctx: GraphQLContext) =>
        // Who before which: the writer check comes before the id is parsed.
        catalog.updateProduct(catalog.writer(ctx.caller), parseId(args.id), args.input),
      deleteProduct: async (_: unknown, args: { id: string }, ctx: GraphQLContext) => {
        await catalog.deleteProduct(catalog.writer(ctx.caller), parseId(args.id));
        return args.id;
      },
    },
    Product: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => ctx.loaders.productById.load(parseId(ref.id)),
      price: (p: Product) => centsToPrice(p.priceCents),
    },
  };
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
