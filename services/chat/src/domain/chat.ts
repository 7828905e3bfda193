import { requireCaller, type Caller } from '@halo/kit/auth';
import { alignById, keysetConnection, type ConnectionArgs } from '@halo/kit/domain';
import { badRequest, forbidden, unavailable } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import type { Message, NewMessage } from './model';
import { isPrivateChatId, type ChatInfo } from './members';
import { MemberStream, ResumedStream, type MemberRemoved } from './resume';
import {
  afterOf,
  chatIdOf,
  DEFAULT_PAGE,
  DELIVERY_UNAVAILABLE,
  MAX_REPLAY,
  MESSAGE_CURSOR,
  messageText,
  NOT_IN_CHAT,
  tooLong,
} from './rules';

/** What travels on a chat's channel: its messages, and (private chats) members' removals. */
export type ChatEvent = Message | MemberRemoved;

/** Private chats' membership (`Members`): who may use a chat, and removing a member. */
export interface AccessCheck {
  /** Throws FORBIDDEN for a private chat the user is not a member of. */
  requireAccess(chatId: string, userId: number): Promise<void>;
  remove(caller: Caller | null, input: { chatId: unknown; userId: unknown }): Promise<{ chat: ChatInfo; removed: number | null }>;
}

/** Without membership (unit tests): private chat ids are nobody's. */
const NO_PRIVATE_CHATS: AccessCheck = {
  requireAccess: (chatId) => (isPrivateChatId(chatId) ? Promise.reject(forbidden()) : Promise.resolve()),
  remove: () => Promise.reject(forbidden()),
};

/** What the domain needs from storage; `ChatStore` implements it over SQL. */
export interface ChatRepo {
  /**
   * One transaction: creates the chat if it is new and locks its row, inserts the message, awaits
   * `publish(message)`, and commits only after it resolved. When `publish` throws, nothing is
   * written. Sends to one chat are serialised by the lock, so their ids, their publications and
   * their commits all happen in one order, across replicas.
   */
  appendMessage(m: NewMessage, publish: (message: Message) => Promise<void>): Promise<Message>;
  /** A chat's messages with id < `beforeId` (all when null), newest first, at most `limit`. */
  messagesPage(chatId: string, limit: number, beforeId: number | null): Promise<Message[]>;
  messagesByIds(ids: readonly number[]): Promise<Message[]>;
  /**
   * A chat's messages with id > `afterId`, oldest first, at most `limit`; null when `afterId` is
   * not a message of that chat. Waits for any send to the chat that is between its publish and its
   * commit (the chat's lock), so every message published before the call is in the answer.
   */
  messagesAfter(chatId: string, afterId: number, limit: number): Promise<Message[] | null>;
}

/**
 * Where messages go to their subscribers: Redis pub/sub shared by every replica, or this process
 * alone (the embedded mode). At most once: a subscriber that is not connected misses what was
 * published meanwhile (it resumes with `newMessage(chatId, after)`, which reads that from storage).
 */
export interface MessageBus {
  /** Resolves once the message was handed to the bus; rejects when it cannot be. */
  publish(message: Message): Promise<void>;
  /** Tells a private chat's subscribers that a member is gone: their subscriptions end. */
  publishRemoval(event: MemberRemoved): Promise<void>;
  /** Resolves once delivery to this subscriber is established; its `return()` ends it. */
  subscribe(chatId: string): Promise<AsyncIterableIterator<ChatEvent>>;
  /** Readiness: rejects while messages could not be delivered. */
  ready(): Promise<void>;
}

/**
 * The chat use cases, once, for every transport. Order of checks: who (401), then what (400),
 * then membership (403: private chats only; any signed-in user may read and write any free-form
 * chat whose id they know).
 */
export class Chat {
  constructor(
    private readonly repo: ChatRepo,
    private readonly bus: MessageBus,
    private readonly logger?: Logger,
    private readonly access: AccessCheck = NO_PRIVATE_CHATS,
  ) {}

  /** `sendMessage`: stored and published together, or neither (503 when the bus is down). */
  async sendMessage(caller: Caller | null, input: { chatId: unknown; text: unknown }): Promise<Message> {
    const author = requireCaller(caller);
    const chatId = chatIdOf(input.chatId);
    const text = messageText(input.text);
    await this.access.requireAccess(chatId, author.id);
    return this.repo.appendMessage({ chatId, authorId: author.id, text }, async (message) => {
      try {
        await this.bus.publish(message);
      } catch (err) {
        this.logger?.error({ err }, 'could not publish a message; not sending it');
        throw unavailable(DELIVERY_UNAVAILABLE);
      }
    });
  }

  /**
   * `newMessage(chatId, after)`: every message sent to the chat from now on, in send order; with
   * `after`, first every message after that one (at most MAX_REPLAY, else REPLAY_TOO_LONG). The
   * live stream is established BEFORE the history is read, so the seam has no gap; the resumed
   * stream drops the live messages the history already held, so it has no duplicate.
   */
  async subscribe(caller: Caller | null, rawChatId: unknown, rawAfter?: unknown): Promise<AsyncIterableIterator<Message>> {
    const me = requireCaller(caller);
    const chatId = chatIdOf(rawChatId);
    const after = afterOf(rawAfter);
    let events: AsyncIterableIterator<ChatEvent>;
    try {
      events = await this.bus.subscribe(chatId);
    } catch (err) {
      this.logger?.error({ err }, 'could not subscribe to a chat');
      throw unavailable(DELIVERY_UNAVAILABLE);
    }
    // Checked once subscribed: a removal from now on arrives on the channel and ends the stream.
    const live = new MemberStream<Message>(events, me.id, () => forbidden('Removed from this chat'));
    try {
      await this.access.requireAccess(chatId, me.id);
      if (after === null) return live;
      const history = await this.repo.messagesAfter(chatId, after, MAX_REPLAY + 1);
      if (history === null) throw badRequest(NOT_IN_CHAT);
      if (history.length > MAX_REPLAY) throw tooLong();
      return new ResumedStream(history, live, after);
    } catch (err) {
      await live.return?.();
      throw err;
    }
  }

  /** `messages(chatId, first, after)`: newest first; a chat without messages is an empty connection. */
  async messages(caller: Caller | null, args: { chatId: unknown } & ConnectionArgs) {
    const me = requireCaller(caller);
    const chatId = chatIdOf(args.chatId);
    await this.access.requireAccess(chatId, me.id);
    return keysetConnection(MESSAGE_CURSOR, { first: args.first ?? DEFAULT_PAGE, after: args.after ?? null }, (limit, after) =>
      this.repo.messagesPage(chatId, limit, after?.id ?? null),
    );
  }

  /**
   * `removeChatMember`: the membership rule (Members.remove), then the removed member's open
   * subscriptions end on every replica (a removal on the chat's channel). A removal that cannot be
   * announced is logged: it stands, and every new request of that member is refused.
   */
  async removeMember(caller: Caller | null, input: { chatId: unknown; userId: unknown }): Promise<ChatInfo> {
    const { chat, removed } = await this.access.remove(caller, input);
    if (removed === null) return chat;
    try {
      await this.bus.publishRemoval({ kind: 'removed', chatId: chat.id, userId: removed });
    } catch (err) {
      this.logger?.error({ err }, 'could not announce a removal; open subscriptions of that member stay open');
    }
    return chat;
  }

  /** An entity reference's message as `caller` may see it: a private chat's message only for its members, else null. */
  async visibleMessage(caller: Caller, message: Message): Promise<Message | null> {
    if (!isPrivateChatId(message.chatId)) return message;
    return this.access.requireAccess(message.chatId, caller.id).then(
      () => message,
      () => null,
    );
  }

  /** Whether `caller` may read messages at all (entity references from the gateway). */
  mayRead(caller: Caller | null): boolean {
    return caller !== null;
  }

  /** DataLoader batch: messages by id, in the order asked, null where unknown. */
  async lookUpMessages(ids: readonly number[]): Promise<(Message | null)[]> {
    return alignById(ids, await this.repo.messagesByIds(ids));
  }

  ready(): Promise<void> {
    return this.bus.ready();
  }
}
