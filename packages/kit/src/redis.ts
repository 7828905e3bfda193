import type { Redis, RedisOptions } from 'ioredis';
import { load } from './lazy';
import type { Logger } from './logger';

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
