import { AS, call, CLOSED_REDIS_URL, newKey, pay, startTestPayments, type TestPayments } from './helpers';

/**
 * Redis unreachable (an address where nothing listens, so the shared server keeps running for
 * the other test files): payments fail closed at once with 503, and nothing is charged or stored.
 */

let t: TestPayments;

beforeAll(async () => {
  t = await startTestPayments({ REDIS_URL: CLOSED_REDIS_URL });
});

afterAll(async () => {
  await t?.close();
});

it('POST /api/payments → 503 Idempotency store unavailable at once; zero rows, zero charges', async () => {
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    const res = await pay(t.base, newKey(), { amount: 10 });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'Idempotency store unavailable' });
    // No offline queue: the answer does not wait for reconnects (ioredis's own defaults would hold it
    // through 20 of them, many seconds). A coarse bound: a loaded 2-core CI machine took 566 ms once.
    expect(Date.now() - started).toBeLessThan(1_500);
  }
  expect((await t.db.query('SELECT count(*)::int AS n FROM payments')).rows).toEqual([{ n: 0 }]);
  expect(t.service.domain.processor.calls).toBe(0);
});

it('checks that need no store still answer first: 401, 403, 400', async () => {
  expect((await pay(t.base, newKey(), { amount: 10 }, {})).status).toBe(401);
  expect((await pay(t.base, newKey(), { amount: 10 }, AS.key(7, 'profile:read'))).status).toBe(403);
  expect((await pay(t.base, null, { amount: 10 })).body).toEqual({ error: 'Idempotency-Key required' });
  expect((await pay(t.base, newKey(), { amount: -1 })).status).toBe(400);
});

it('what needs no Redis keeps working: reading payments and orders', async () => {
  expect((await call(t.base, 'GET', '/api/orders', { headers: AS.user(7) })).body).toEqual({ data: [] });
  expect((await call(t.base, 'GET', '/api/payments/1', { headers: AS.user(7) })).status).toBe(404);
});

it('/readyz fails while Redis is down (a load balancer stops sending payments here); /healthz stays up', async () => {
  expect((await fetch(`${t.base}/readyz`)).status).toBe(503);
  expect((await fetch(`${t.base}/healthz`)).status).toBe(200);
});
