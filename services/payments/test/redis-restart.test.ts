import { freePort, startRedisServer, type RedisServer } from '@halo/kit/testing';
import { newKey, pay, startTestPayments, type TestPayments } from './helpers';

/**
 * Redis stopped and started again under a running payments service: while it is gone, payments
 * fail closed at once (503, nothing charged); once it is back, payments work again without a
 * restart — and a retry of a payment made before the outage, whose stored response Redis lost,
 * is answered from the database (the same payment), never charged twice. A private redis-server
 * (the real binary, its own port) so the shared one stays up for the other test files.
 */
let redis: RedisServer | undefined;
let port: number;
let t: TestPayments;

async function startRedis(): Promise<void> {
  redis = await startRedisServer(port);
}

async function stopRedis(): Promise<void> {
  await redis?.stop();
  redis = undefined;
}

beforeAll(async () => {
  port = await freePort();
  await startRedis();
  t = await startTestPayments({ REDIS_URL: `redis://127.0.0.1:${port}` });
});

afterAll(async () => {
  await t?.close();
  await stopRedis();
});

const rows = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments')).rows[0]!.n;

it('fails closed while Redis is gone, recovers when it is back, and a retry across the outage is the same payment', async () => {
  const before = newKey();
  const first = await pay(t.base, before, { amount: 21 });
  expect(first.status).toBe(201);
  expect(await rows()).toBe(1);

  await stopRedis();
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    const res = await pay(t.base, newKey(), { amount: 5 });
    expect([res.status, res.body]).toEqual([503, { error: 'Idempotency store unavailable' }]);
    expect(Date.now() - started).toBeLessThan(1_000);
  }
  expect(await rows()).toBe(1);

  await startRedis(); // empty: everything Redis held is lost
  const deadline = Date.now() + 15_000;
  let after = await pay(t.base, newKey(), { amount: 7 });
  while (after.status === 503 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    after = await pay(t.base, newKey(), { amount: 7 });
  }
  expect(after.status).toBe(201);

  // The pre-outage key: Redis forgot it, the database did not.
  const retry = await pay(t.base, before, { amount: 21 });
  expect(retry.status).toBe(201);
  expect((retry.body as { data: { id: number } }).data.id).toBe((first.body as { data: { id: number } }).data.id);
  expect(await rows()).toBe(2);
  expect(t.service.domain.processor.charged).toBe(2);
}, 60_000);
