import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Caller } from '@halo/kit/auth';
import { parseId } from '@halo/kit/domain';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Chat } from '../domain/chat';
import type { ChatInfo, Members } from '../domain/members';
import type { Message } from '../domain/model';
import type { Loaders } from './loaders';

/** The context of every operation, over HTTP and over WebSocket alike (the kit builds it). */
export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
  loaders: Loaders;
}

/**
 * The subgraph over the domain. `newMessage` events are the `Message` objects the domain
 * publishes, resolved exactly as `sendMessage`'s answer; `author` is a reference the gateway
 * resolves in content.
 */
export function chatSchema(typeDefs: DocumentNode, chat: Chat, members: Members): GraphQLSchema {
  const resolvers = {
    Query: {
      messages: (_: unknown, args: { chatId: string; first?: number | null; after?: string | null }, ctx: GraphQLContext) =>
        chat.messages(ctx.caller, args),
      chats: (_: unknown, args: { first?: number | null; after?: string | null }, ctx: GraphQLContext) => members.chats(ctx.caller, args),
    },
    Mutation: {
      sendMessage: (_: unknown, args: { chatId: string; text: string }, ctx: GraphQLContext) => chat.sendMessage(ctx.caller, args),
      createChat: (_: unknown, args: { title?: string | null; memberIds: string[] }, ctx: GraphQLContext) =>
        members.create(ctx.caller, { title: args.title, memberIds: args.memberIds }),
      addChatMembers: (_: unknown, args: { chatId: string; memberIds: string[] }, ctx: GraphQLContext) => members.add(ctx.caller, args),
      removeChatMember: (_: unknown, args: { chatId: string; userId: string }, ctx: GraphQLContext) => chat.removeMember(ctx.caller, args),
    },
    Subscription: {
      newMessage: {
        subscribe: (_: unknown, args: { chatId: string; after?: string | null }, ctx: GraphQLContext) =>
          chat.subscribe(ctx.caller, args.chatId, args.after),
        resolve: (message: Message) => message,
      },
    },
    Chat: {
      creator: (c: ChatInfo) => ({ __typename: 'User', id: String(c.creatorId) }),
      members: (c: ChatInfo) => c.memberIds.map((id) => ({ __typename: 'User', id: String(id) })),
    },
    Message: {
      // Entity references from the gateway: an unknown id (or an anonymous caller) is null, never an error.
      // A private chat's message: null for anyone but its members, as for an unknown id.
      __resolveReference: async (ref: { id: string }, ctx: GraphQLContext) => {
        if (!ctx.caller || !chat.mayRead(ctx.caller)) return null;
        const message = await ctx.loaders.messageById.load(parseId(ref.id)).catch(() => null);
        return message && chat.visibleMessage(ctx.caller, message);
      },
      author: (m: Message) => ({ __typename: 'User', id: String(m.authorId) }),
    },
  };
  // The resolver map is typed with our context; Apollo's type wants its own (hence the cast).
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
