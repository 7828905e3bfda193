import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Caller } from '@halo/kit/auth';
import { parseId } from '@halo/kit/domain';
import { found } from '@halo/kit/errors';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Content } from '../domain/content';
import type { Comment, Post, User } from '../domain/model';
import type { Loaders } from './loaders';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
  loaders: Loaders;
}

/**
 * The subgraph over the domain: lists call use cases, single rows go through the request's
 * loaders (domain batch methods) with the domain's not-found rule; a referenced row that vanished
 * between planning and fetching is a NOT_FOUND, not a crash. Entity references stay null when unknown.
 */
export function contentSchema(typeDefs: DocumentNode, content: Content): GraphQLSchema {
  const resolvers = {
    Query: {
      user: (_: unknown, args: { id: string }, ctx: GraphQLContext) => ctx.loaders.userById.load(parseId(args.id)).then(found),
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
      createUser: (_: unknown, args: { name: string; email: string }, ctx: GraphQLContext) => content.createUser(ctx.caller, args),
    },
    User: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => ctx.loaders.userById.load(parseId(ref.id)),
      // Every path to a user (user, users, nested authors, _entities) ends here.
      email: (user: User, _: unknown, ctx: GraphQLContext) => content.emailOf(ctx.caller, user),
      posts: async (user: User, _: unknown, ctx: GraphQLContext) => {
        const posts = await ctx.loaders.postsByUserId.load(user.id);
        ctx.loaders.primePosts(posts);
        return posts;
      },
    },
    Post: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => ctx.loaders.postById.load(parseId(ref.id)),
      author: (post: Post, _: unknown, ctx: GraphQLContext) => ctx.loaders.userById.load(post.userId).then(found),
      comments: (post: Post, _: unknown, ctx: GraphQLContext) => ctx.loaders.commentsByPostId.load(post.id),
    },
    Comment: {
      author: (c: Comment, _: unknown, ctx: GraphQLContext) => ctx.loaders.userById.load(c.userId).then(found),
      post: (c: Comment, _: unknown, ctx: GraphQLContext) => ctx.loaders.postById.load(c.postId).then(found),
    },
  };
  // The resolver map is typed with our context; Apollo's type wants its own (hence the cast).
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
