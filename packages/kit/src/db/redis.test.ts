import { createLogger } from '../logging/logger';
import { closedPort } from '../launch/ports';
import { closeRedis, openRedis, redisReady, type Redis } from './redis';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const logger = createLogger('kit-redis-test', 'silent');

/** Resolves once `client.status` is `status`. */
function statusIs(client: Redis, status: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 5_000;
    const check = () => {
      if (client.status === status) return resolve();
      if (Date.now() > deadline) return reject(new Error(`status stayed ${client.status}, not ${status}`));
      setTimeout(check, 10).unref();
    };
    check();
  });
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('closeRedis', () => {
  afterEach(() => jest.restoreAllMocks());

  it('while Redis is unreachable (waiting to reconnect) leaves no timer behind to keep the process up', async () => {
    const client = openRedis(`redis://127.0.0.1:${await closedPort()}`, logger);
    expect(await redisReady(client)).toBe(false);
    await statusIs(client, 'reconnecting');
    const timers = jest.spyOn(globalThis, 'setTimeout');

    closeRedis(client);
    await nextTurn();

    // ioredis' disconnect() arms a timer for a socket that already closed (the leak closeRedis avoids).
    const holding = timers.mock.results.map((r) => r.value as NodeJS.Timeout).filter((t) => t.hasRef());
    expect(holding.length).toBe(0);
    // Nor does it come back: the reconnect it was waiting for is cancelled.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.status).toBe('reconnecting');
  });

  it('ends a connected client', async () => {
    const client = openRedis(TEST_REDIS_URL, logger);
    expect(await redisReady(client)).toBe(true);
    const ended = new Promise((resolve) => client.once('end', resolve));

    closeRedis(client);
    await ended;

    expect(client.status).toBe('end');
    await expect(client.ping()).rejects.toThrow();
  });
});
