import DataLoader from 'dataloader';
import type { Chat } from '../domain/chat';
import type { Message } from '../domain/model';

/** Per-operation batching over the domain's batch methods: `_entities` of N messages is one statement. */
export function createLoaders(chat: Chat) {
  return {
    messageById: new DataLoader<number, Message | null>((ids) => chat.lookUpMessages(ids)),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
