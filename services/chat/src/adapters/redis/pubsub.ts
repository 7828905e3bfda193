import { closeRedis, openRedis, redisReady, type Redis } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';
import type { Lifecycle } from '@halo/kit/process';
import { RedisPubSub } from 'graphql-redis-subscriptions';
import { PubSubMessageBus } from '../pubsub/bus';

/**
 * The bus in Redis (`graphql-redis-subscriptions` over ioredis): a publisher and a separate
 * subscriber connection, both the kit's fail-fast clients. While Redis is unreachable a publish is
 * refused at once (sendMessage answers 503 and stores nothing), new subscriptions are refused, and
 * readiness fails; open subscriptions resume when it is back (ioredis re-subscribes by itself).
 */
export async function redisMessageBus(url: string, prefix: string, logger: Logger, lifecycle: Lifecycle): Promise<PubSubMessageBus> {
  const publisher = openRedis(url, logger);
  const subscriber = openRedis(url, logger);
  lifecycle.register('redis', () => {
    closeRedis(publisher);
    closeRedis(subscriber);
  });
  const refused = new Set<string>();
  guardUnsubscribe(subscriber, (channels) => channels.forEach((c) => refused.add(c)));
  const bus = new PubSubMessageBus(new GuardedRedisPubSub({ publisher, subscriber }), prefix, async () => {
    await publisher.ping();
    if (subscriber.status !== 'ready') throw new Error('redis subscriber connection is not ready');
  });
  // Back after an outage, ioredis re-subscribes every channel it still counts, including those
  // whose UNSUBSCRIBE was refused meanwhile: drop the ones nobody here listens to any more.
  subscriber.on('ready', () => {
    for (const channel of [...refused]) {
      refused.delete(channel);
      if (!bus.listens(channel)) void subscriber.unsubscribe(channel);
    }
  });
  const [pub, sub] = await Promise.all([redisReady(publisher), redisReady(subscriber)]);
  if (!pub || !sub) logger.warn('redis not reachable at start-up; messages are refused until it is');
  return bus;
}

/** What GuardedRedisPubSub reaches inside graphql-redis-subscriptions 2.7 (pinned for it). */
interface RedisPubSubInternals {
  currentSubscriptionId: number;
  subscriptionMap: Record<number, unknown>;
  subsPendingRefsMap: Map<string, { pending: { catch(onRejected: () => void): unknown } }>;
}

/**
 * RedisPubSub whose failed SUBSCRIBE (Redis unreachable) costs nothing but the caller's rejection.
 * Upstream keeps, per channel, a promise for concurrent subscribers and rejects it when SUBSCRIBE
 * fails: with none waiting, nobody handles it, and an unhandled rejection would end the process.
 * It also keeps the failed subscriber's listener for good. Both are undone here.
 */
class GuardedRedisPubSub extends RedisPubSub {
  override subscribe<T>(trigger: string, onMessage: (message: T) => void, options?: unknown): Promise<number> {
    const internals = this as unknown as RedisPubSubInternals;
    const id = internals.currentSubscriptionId;
    const subscribed = super.subscribe(trigger, onMessage, options);
    internals.subsPendingRefsMap.get(trigger)?.pending.catch(() => undefined);
    return subscribed.catch((err: unknown) => {
      delete internals.subscriptionMap[id];
      throw err;
    });
  }
}

/**
 * RedisPubSub sends UNSUBSCRIBE and PUNSUBSCRIBE without handling their replies. With no offline
 * queue, both are refused at once while Redis is unreachable, and an unhandled rejection would end
 * the process: refusals are caught and reported to `onRefused`. Halo subscribes to channels, never
 * patterns, so PUNSUBSCRIBE is not sent at all.
 */
function guardUnsubscribe(subscriber: Redis, onRefused: (channels: string[]) => void): void {
  const unsubscribe = subscriber.unsubscribe.bind(subscriber) as (...channels: string[]) => Promise<unknown>;
  Object.assign(subscriber, {
    unsubscribe: (...channels: string[]) => unsubscribe(...channels).catch(() => onRefused(channels)),
    punsubscribe: () => Promise.resolve(0),
  });
}
