import type { Redis } from '@halo/kit/db';
import {
  flushNamespace,
  newKey,
  pay,
  paymentRows,
  startReplica,
  startTestPayments,
  TEST_REDIS_URL,
  testRedis,
  type TestPayments,
} from './helpers';

/**
 * TWO payments replicas (two services in-process: their own HTTP servers, processors and Redis
 * clients) on the same Postgres schema and the same Redis namespace: what only a shared Redis and
 * a shared database can prove. The processor is slowed down so that the requests really overlap.
 */

let t: TestPayments;
let replica: Awaited<ReturnType<typeof startReplica>>;
let redis: Redis;

const SLOW = { REDIS_URL: TEST_REDIS_URL, PAYMENTS_PROCESSOR_LATENCY_MS: '150' };

beforeAll(async () => {
  t = await startTestPayments(SLOW);
  replica = await startReplica(t, SLOW);
  redis = await testRedis();
});

afterAll(async () => {
  if (redis && t) await flushNamespace(redis, t.db);
  redis?.disconnect();
  await replica?.stop();
  await t?.close();
});

const charged = () => t.service.domain.processor.charged + replica.service.domain.processor.charged;
const bases = () => [t.base, replica.base];

it('20 concurrent requests with one key across two replicas → exactly one charge; every answer the 201 or 409 processing; then every retry replays', async () => {
  const key = newKey();
  const before = charged();
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => pay(bases()[i % 2]!, key, { amount: 250 })));

  const created = answers.filter((a) => a.status === 201);
  const busy = answers.filter((a) => a.status === 409);
  expect(created.length + busy.length).toBe(20);
  expect(created.length).toBeGreaterThanOrEqual(1);
  // Every 201 is the same bytes (one payment), every 409 the contract's answer.
  expect(new Set(created.map((a) => a.text)).size).toBe(1);
  for (const b of busy) {
    expect(b.body).toEqual({ error: 'Request in progress', status: 'processing' });
    expect(Number(b.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  }
  // Both replicas answered some of them.
  expect(busy.length).toBeGreaterThan(0);
  expect(charged() - before).toBe(1);
  expect(await paymentRows(t.db, key)).toHaveLength(1);

  const first = created[0]!.text;
  const retries = await Promise.all(Array.from({ length: 10 }, (_, i) => pay(bases()[i % 2]!, key, { amount: 250 })));
  for (const r of retries) {
    expect(r.status).toBe(201);
    expect(r.text).toBe(first);
    expect(r.headers.get('idempotent-replayed')).toBe('true');
  }
  expect(charged() - before).toBe(1);
});

it('the same, with Redis flushed while the first request is charging: the database fence still allows one charge', async () => {
  const key = newKey();
  const before = charged();
  const firstWave = Promise.all(Array.from({ length: 10 }, (_, i) => pay(bases()[i % 2]!, key, { amount: 75 })));
  await new Promise((r) => setTimeout(r, 50));
  await flushNamespace(redis, t.db); // the lock is gone mid-flight
  const secondWave = await Promise.all(Array.from({ length: 10 }, (_, i) => pay(bases()[i % 2]!, key, { amount: 75 })));
  const answers = [...(await firstWave), ...secondWave];
  expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true);
  expect(new Set(answers.filter((a) => a.status === 201).map((a) => a.text)).size).toBe(1);
  expect(charged() - before).toBe(1);
  expect(await paymentRows(t.db, key)).toHaveLength(1);
  const after = await pay(t.base, key, { amount: 75 });
  expect(after.status).toBe(201);
  expect(after.headers.get('idempotent-replayed')).toBe('true');
});

it('different keys on both replicas at once are independent payments', async () => {
  const keys = Array.from({ length: 10 }, newKey);
  const before = charged();
  const answers = await Promise.all(keys.map((k, i) => pay(bases()[i % 2]!, k, { amount: 1 + i })));
  expect(answers.map((a) => a.status)).toEqual(Array<number>(10).fill(201));
  expect(new Set(answers.map((a) => a.body!.data.id)).size).toBe(10);
  expect(charged() - before).toBe(10);
});
