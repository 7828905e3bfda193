import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { notFound, requireAdmin, type Caller } from '@halo/kit';
import { parse, type GraphQLSchema } from 'graphql';
import type { Content } from '../domain/content';
import type { Comment, Post, User } from '../domain/model';
import { parseId } from '../domain/rules';
import type { Loaders } from './loaders';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
  loaders: Loaders;
}

/** The subgraph SDL is a file of its own (services/content/schema.graphql) that composition reads too. */
export const SCHEMA_PATH = resolve(__dirname, '../../schema.graphql');

/** A referenced row that vanished between planning and fetching is a NOT_FOUND, not a crash. */
const must = <T>(v: T | null): T => {
  if (v === null) throw notFound();
  return v;
};

export function contentSchema(content: Content): GraphQLSchema {
  const typeDefs = parse(readFileSync(SCHEMA_PATH, 'utf8'));
  const resolvers = {
    Query: {
      user: (_: unknown, args: { id: string }, ctx: GraphQLContext) =>
        ctx.loaders.userById.load(parseId(args.id)).then(must),
      users: async (_: unknown, __: unknown, ctx: GraphQLContext) => {
        const users = await content.users();
        ctx.loaders.primeUsers(users);
        return users;
      },
      posts: async (_: unknown, args: { first?: number | null; after?: string | null }, ctx: GraphQLContext) => {
        const conn = await content.postsConnection(args);
        ctx.loaders.primePosts(conn.edges.map((e) => e.node));
        return conn;
      },
    },
    Mutation: {
      // Admins only; an API key also needs the users:write scope.
      createUser: (_: unknown, args: { name: string; email: string }, ctx: GraphQLContext) => {
        requireAdmin(ctx.caller, 'users:write');
        return content.createUser(args);
      },
    },
    User: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => ctx.loaders.userById.load(parseId(ref.id)),
      posts: async (user: User, _: unknown, ctx: GraphQLContext) => {
        const posts = await ctx.loaders.postsByUserId.load(user.id);
        ctx.loaders.primePosts(posts);
        return posts;
      },
    },
    Post: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => ctx.loaders.postById.load(parseId(ref.id)),
      author: (post: Post, _: unknown, ctx: GraphQLContext) => ctx.loaders.userById.load(post.userId).then(must),
      comments: (post: Post, _: unknown, ctx: GraphQLContext) => ctx.loaders.commentsByPostId.load(post.id),
    },
    Comment: {
      author: (c: Comment, _: unknown, ctx: GraphQLContext) => ctx.loaders.userById.load(c.userId).then(must),
      post: (c: Comment, _: unknown, ctx: GraphQLContext) => ctx.loaders.postById.load(c.postId).then(must),
    },
  };
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
