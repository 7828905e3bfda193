import type { Redis } from '@halo/kit/db';
import { freePort, startRedisServer, type RedisServer } from '@halo/kit/testing';
import {
  AS,
  bearer,
  channelOf,
  gql,
  messageRows,
  numsub,
  send,
  SEND,
  startTestChat,
  subscribe,
  subscriptionsOpen,
  testRedis,
  until,
  wsClient,
  type TestChat,
} from './helpers';

/**
 * Redis stopped and started again under a running chat service: while it is gone sendMessage
 * fails (SERVICE_UNAVAILABLE) and writes nothing; once it is back, sending works again without a
 * restart, and the subscriptions that stayed open resume (ioredis re-subscribes) — while one
 * ended during the outage is not resurrected in Redis. A private redis-server (the real binary,
 * its own port) so the shared one stays up for the other test files.
 */
let server: RedisServer | undefined;
let port: number;
let t: TestChat;

async function startRedis(): Promise<void> {
  server = await startRedisServer(port);
}

async function stopRedis(): Promise<void> {
  await server?.stop();
  server = undefined;
}

beforeAll(async () => {
  port = await freePort();
  await startRedis();
  t = await startTestChat({ REDIS_URL: `redis://127.0.0.1:${port}` });
});

afterAll(async () => {
  await t?.close();
  await stopRedis();
});

it('refuses while Redis is gone, recovers when it is back, and open subscriptions resume', async () => {
  const c = wsClient(t.base, { authorization: bearer(1) });
  let redis: Redis | undefined;
  try {
    const kept = subscribe(c.client, 'kept');
    const ended = subscribe(c.client, 'ended');
    await subscriptionsOpen(t.base, 2);
    const before = await send(t.base, 'kept', 'before the outage');
    await until('the first event', () => kept.events.length === 1);

    await stopRedis();
    await until('readiness to fail', async () => (await fetch(`${t.base}/readyz`)).status === 503);
    const refused = await gql(t.base, SEND, { chatId: 'kept', text: 'during the outage' }, AS(1));
    expect(refused.body.errors![0]).toMatchObject({ message: 'Message delivery unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } });
    expect((await messageRows(t.db)).map((r) => r.text)).toEqual(['before the outage']);
    // A subscription ends while Redis cannot hear its UNSUBSCRIBE: no crash, and it is gone here.
    ended.unsubscribe();
    await subscriptionsOpen(t.base, 1);

    await startRedis(); // empty: it knows no subscriptions
    await until('readiness', async () => (await fetch(`${t.base}/readyz`)).status === 200, 15_000);
    redis = await testRedis(`redis://127.0.0.1:${port}`);
    await until('the kept subscription back in Redis', async () => (await numsub(redis!, channelOf(t.db, 'kept'))) === 1);
    await until('the ended one not', async () => (await numsub(redis!, channelOf(t.db, 'ended'))) === 0);

    const after = await send(t.base, 'kept', 'after the outage');
    await until('the second event', () => kept.events.length === 2);
    expect(kept.events).toEqual([before, after]);
    expect(kept.error).toBeUndefined();
    expect((await messageRows(t.db)).map((r) => r.text)).toEqual(['before the outage', 'after the outage']);
  } finally {
    redis?.disconnect();
    await c.dispose();
  }
}, 60_000);
