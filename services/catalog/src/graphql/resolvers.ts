import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { notFound, type Caller } from '@halo/kit';
import { parse, type GraphQLSchema } from 'graphql';
import type { Catalog } from '../domain/catalog';
import type { Order, Product, SortKey } from '../domain/model';
import { centsToPrice, parseId } from '../domain/rules';
import type { Loaders } from './loaders';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
  loaders: Loaders;
}

/** The subgraph SDL is a file of its own (services/catalog/schema.graphql) that composition reads too. */
export const SCHEMA_PATH = resolve(__dirname, '../../schema.graphql');

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

export function catalogSchema(catalog: Catalog): GraphQLSchema {
  const typeDefs = parse(readFileSync(SCHEMA_PATH, 'utf8'));
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
      product: async (_: unknown, args: { id: string }, ctx: GraphQLContext) => {
        const product = await ctx.loaders.productById.load(parseId(args.id));
        if (!product) throw notFound();
        return product;
      },
    },
    Mutation: {
      createProduct: (_: unknown, args: { input: unknown }, ctx: GraphQLContext) => catalog.createProduct(ctx.caller, args.input),
      updateProduct: (_: unknown, args: { id: string; input: unknown }, ctx: GraphQLContext) =>
        catalog.updateProduct(ctx.caller, args.id, args.input),
      deleteProduct: async (_: unknown, args: { id: string }, ctx: GraphQLContext) => {
        await catalog.deleteProduct(ctx.caller, args.id);
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
