import type { Redis, RedisOptions } from 'ioredis';
import { load } from '../process/lazy';
import type { Logger } from '../logging/logger';

export type { Redis, RedisOptions };

/**
 * An ioredis client that fails fast instead of waiting: while Redis is unreachable a command is
 * rejected at once (no offline queue) or after `commandTimeout`, so each caller decides whether
 * to fail open or closed. It reconnects in the background; errors are logged once per outage.
 * Wait for the first connection with `redisReady` — commands sent before it are rejected.
 */
export function openRedis(url: string, logger: Logger, options: RedisOptions = {}): Redis {
  const IORedis = load.ioredis();
  const client = new IORedis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    ...options,
  });
  let healthy = true;
  client.on('error', (err: Error) => {
    if (!healthy) return;
    healthy = false;
    logger.warn({ err: err.message }, 'redis unavailable');
  });
  client.on('ready', () => {
    if (!healthy) logger.info('redis reconnected');
    healthy = true;
  });
  return client;
}

/**
 * Ends the client for good (no reconnecting) and leaves nothing behind to keep the process up. Use
 * it instead of `disconnect()`: ioredis' `disconnect()` called while the client waits to reconnect
 * (Redis unreachable) ends the socket that has already closed and arms its `disconnectTimeout`
 * timer, which only that socket's 'close' event clears — an event that came before, so the timer
 * holds the event loop for its whole delay after shutdown (ioredis issue 1247). The closed socket
 * is forgotten first, leaving `disconnect()` nothing to end; a live one is ended as before.
 */
export function closeRedis(client: Redis): void {
  // `connector` is private in ioredis' typings; its `stream` is the socket `disconnect()` ends.
  const connector = (client as unknown as { connector?: { stream?: { destroyed?: boolean } } }).connector;
  if (connector?.stream?.destroyed) connector.stream = undefined;
  client.disconnect();
}

/** Resolves true once the client is ready, false on its first error or after `timeoutMs`. */
export function redisReady(client: Redis, timeoutMs = 2_000): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      resolve(ok);
    };
    const onReady = () => done(true);
    const onError = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.once('ready', onReady);
    client.once('error', onError);
  });
}
