import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import { defineService } from '@halo/kit/service';
import { PubSub } from 'graphql-subscriptions';
import { PubSubMessageBus } from './adapters/pubsub/bus';
import { redisMessageBus } from './adapters/redis/pubsub';
import { refineChatConfig, chatConfigShape } from './config';
import { MembersStore } from './db/members-store';
import { ChatStore } from './db/store';
import { Chat } from './domain/chat';
import { Members } from './domain/members';
import { contentUsers } from './grpc/clients/content-users';
import { createLoaders } from './graphql/loaders';
import { chatSchema } from './graphql/resolvers';

/**
 * Chats and their messages: the GraphQL subgraph (messages, sendMessage) and its subscription
 * (newMessage), which the kit serves over WebSocket. Messages reach subscribers through Redis
 * pub/sub shared by every replica, or in-process without REDIS_URL (one replica). chat calls
 * content over gRPC (are a private chat's member ids users?) and serves no gRPC of its own (health only).
 */
export const chatService = defineService({
  name: 'chat',
  root: resolve(__dirname, '..'),
  config: chatConfigShape,
  refineConfig: refineChatConfig,
  peers: { users: { service: 'content', client: contentUsers } },
  domain: async ({ db, config, logger, lifecycle, peers: { users } }) => {
    const members = new Members(new MembersStore(db), users);
    // One namespace per database schema, so deployments (and test files) sharing a Redis never mix.
    const prefix = `halo:${db.schema}:`;
    const bus = config.REDIS_URL
      ? await redisMessageBus(config.REDIS_URL, prefix, logger, lifecycle)
      : new PubSubMessageBus(inProcessPubSub(), prefix);
    logger.info({ pubsub: config.REDIS_URL ? 'redis' : 'in-process' }, 'chat ready to deliver');
    return { chat: new Chat(new ChatStore(db), bus, logger, members), members, bus };
  },
  // Messages are refused (503) while they cannot be delivered, so readiness fails with the bus.
  ready: ({ chat }) => chat.ready(),
  graphql: {
    schema: (typeDefs, { chat, members }) => chatSchema(typeDefs, chat, members),
    context: ({ chat }) => ({ loaders: createLoaders(chat) }),
  },
});

export type ChatService = Awaited<ReturnType<typeof chatService.start>>;

/**
 * The embedded mode's bus: graphql-subscriptions' PubSub over an EventEmitter with no listener
 * cap (every subscriber of a chat is one listener; Node warns past 10 by default).
 */
function inProcessPubSub(): PubSub {
  const eventEmitter = new EventEmitter();
  eventEmitter.setMaxListeners(0);
  return new PubSub({ eventEmitter });
}
