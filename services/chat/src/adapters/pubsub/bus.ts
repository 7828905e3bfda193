import { unavailable } from '@halo/kit/errors';
import type { PubSubEngine } from 'graphql-subscriptions';
import type { ChatEvent, MessageBus } from '../../domain/chat';
import type { MemberRemoved } from '../../domain/resume';
import type { Message } from '../../domain/model';
import { Inbox } from '../../domain/inbox';

/** Messages one subscriber may fall behind by before its subscription ends (it catches up with `messages`). */
export const MAX_UNDELIVERED = 1_000;

/**
 * The message bus over a graphql-subscriptions engine: `RedisPubSub` (every replica shares it) or
 * the in-process `PubSub` (one process: the embedded mode). One channel per chat,
 * `<prefix>chat:<chatId>` with prefix `halo:<schema>:`, so deployments and test files sharing a
 * Redis never hear each other. A subscription is established (in Redis: SUBSCRIBE acknowledged)
 * before `subscribe` resolves, so "from now on" starts when the caller is told it has started.
 */
export class PubSubMessageBus implements MessageBus {
  /** Subscribers of this process per channel, counted from the moment they ask. */
  private readonly listeners = new Map<string, number>();

  constructor(
    private readonly engine: PubSubEngine,
    private readonly prefix: string,
    private readonly check: () => Promise<void> = () => Promise.resolve(),
  ) {}

  channel(chatId: string): string {
    return `${this.prefix}chat:${chatId}`;
  }

  publish(message: Message): Promise<void> {
    return this.engine.publish(this.channel(message.chatId), message);
  }

  publishRemoval(event: MemberRemoved): Promise<void> {
    return this.engine.publish(this.channel(event.chatId), event);
  }

  async subscribe(chatId: string): Promise<AsyncIterableIterator<ChatEvent>> {
    const channel = this.channel(chatId);
    this.count(channel, 1);
    let subId: number | undefined;
    const inbox = new Inbox<ChatEvent>(
      () => {
        if (subId !== undefined) this.engine.unsubscribe(subId);
        this.count(channel, -1);
      },
      MAX_UNDELIVERED,
      () => unavailable('Too many undelivered messages: subscribe again and read the rest with messages'),
    );
    try {
      subId = await this.engine.subscribe(channel, (event: ChatEvent) => inbox.push(event), {});
    } catch (err) {
      this.count(channel, -1);
      throw err;
    }
    return inbox;
  }

  /** Whether a subscriber of this process listens on `channel` (or is subscribing to it). */
  listens(channel: string): boolean {
    return (this.listeners.get(channel) ?? 0) > 0;
  }

  ready(): Promise<void> {
    return this.check();
  }

  private count(channel: string, delta: number): void {
    const n = (this.listeners.get(channel) ?? 0) + delta;
    if (n > 0) this.listeners.set(channel, n);
    else this.listeners.delete(channel);
  }
}
