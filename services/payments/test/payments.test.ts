import type { Redis } from '@halo/kit/db';
import type { RedisIdempotencyStore } from '../src/adapters/redis/idempotency';
import { requestFingerprint, sha256Hex } from '../src/domain/rules';
import {
  AS,
  call,
  flushNamespace,
  namespaceKeys,
  namespaceOf,
  newKey,
  pay,
  paymentRows,
  sleep,
  startReplica,
  startTestPayments,
  TEST_REDIS_URL,
  testRedis,
  type TestPayments,
} from './helpers';

/**
 * POST /api/payments against the real Postgres and the real Redis (this file's own namespace):
 * the contract of docs/api/resources.md "Payments", and every fault the issue lists for one
 * replica. The two-replica cases are in concurrency.test.ts, Redis down in redis-down.test.ts.
 */

let t: TestPayments;
let redis: Redis;

beforeAll(async () => {
  t = await startTestPayments({ REDIS_URL: TEST_REDIS_URL });
  redis = await testRedis();
});

afterAll(async () => {
  if (redis && t) await flushNamespace(redis, t.db);
  redis?.disconnect();
  await t?.close();
});

const processor = () => t.service.domain.processor;

describe('metrics', () => {
  it('counts each keyed request by outcome at /metrics (first, replay, in_progress = 409, reused = 422)', async () => {
    const outcomes = async () => {
      const text = await (await fetch(`${t.base}/metrics`)).text();
      const of = (o: string) =>
        Number(
          text
            .split('\n')
            .find(
              (l) => l.startsWith('halo_idempotency_outcomes_total{') && l.includes(`outcome="${o}"`) && l.includes('service="payments"'),
            )
            ?.split(' ')[1] ?? 0,
        );
      return { first: of('first'), replay: of('replay'), in_progress: of('in_progress'), reused: of('reused') };
    };
    const before = await outcomes();
    const key = newKey();
    expect((await pay(t.base, key, { amount: 3 })).status).toBe(201);
    expect((await pay(t.base, key, { amount: 3 })).status).toBe(201);
    expect((await pay(t.base, key, { amount: 4 })).status).toBe(422);
    // Another request holds this key's lock (as another replica's would): 409.
    const busyKey = newKey();
    const lockKey = (t.service.domain.store as RedisIdempotencyStore).keys(`7:${sha256Hex(busyKey)}`).lock;
    await redis.set(lockKey, `deadbeef:${requestFingerprint('POST', '/api/payments', { amount: 5 })}`, 'PX', 5000);
    expect((await pay(t.base, busyKey, { amount: 5 })).status).toBe(409);
    await redis.del(lockKey);
    const after = await outcomes();
    expect({
      first: after.first - before.first,
      replay: after.replay - before.replay,
      in_progress: after.in_progress - before.in_progress,
      reused: after.reused - before.reused,
    }).toEqual({ first: 1, replay: 1, in_progress: 1, reused: 1 });
  });
});

describe('the first request and its replays', () => {
  it('201 with the payment; a repeat answers the same status and bytes with Idempotent-Replayed: true, charging nothing', async () => {
    const key = newKey();
    const before = processor().charged;
    const first = await pay(t.base, key, { amount: 150.25 });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      data: { id: expect.any(Number), amount: 150.25, currency: 'USD', status: 'succeeded', created_at: expect.stringMatching(/Z$/) },
    });
    expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(first.headers.get('location')).toBe(`/api/payments/${first.body!.data.id}`);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.headers.get('cache-control')).toBe('no-store');

    for (let i = 0; i < 3; i++) {
      const again = await pay(t.base, key, { amount: 150.25 });
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('content-length')).toBe(first.headers.get('content-length'));
      expect(again.headers.get('cache-control')).toBe('no-store');
    }
    expect(processor().charged - before).toBe(1);
    expect(await paymentRows(t.db, key)).toHaveLength(1);
  });

  it('the same JSON written differently (member order, spacing) is the same request', async () => {
    const key = newKey();
    const first = await pay(t.base, key, '{"amount":10,"note":{"b":1,"a":2}}');
    const again = await pay(t.base, key, '{ "note": { "a": 2, "b": 1 }, "amount": 10.0 }');
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('the stored response lives under the caller’s namespace with a 24 h TTL, and the lock is gone', async () => {
    const key = newKey();
    await flushNamespace(redis, t.db);
    await pay(t.base, key, { amount: 1 });
    const keys = await namespaceKeys(redis, t.db);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^${namespaceOf(t.db)}:idem:\\{7:[0-9a-f]{64}\\}:done$`));
    const ttl = await redis.pttl(keys[0]!);
    expect(ttl).toBeGreaterThan(86_400_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
    // The client's key appears nowhere in Redis (it is hashed).
    expect(keys[0]).not.toContain(key);
  });

  it('GET /api/payments/:id: the caller’s own; another user’s or an unknown id → 404', async () => {
    const created = await pay(t.base, newKey(), { amount: 42 });
    const id = created.body!.data.id as number;
    const own = await call(t.base, 'GET', `/api/payments/${id}`, { headers: AS.user(7) });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ data: created.body!.data });
    expect((await call(t.base, 'GET', `/api/payments/${id}`, { headers: AS.user(8) })).body).toEqual({ error: 'Not found' });
    expect((await call(t.base, 'GET', '/api/payments/999999', { headers: AS.user(7) })).status).toBe(404);
    expect((await call(t.base, 'GET', '/api/payments/abc', { headers: AS.user(7) })).body).toEqual({ error: 'Invalid id' });
    expect((await call(t.base, 'GET', '/api/payments/abc')).body).toEqual({ error: 'Token required' });
  });
});

describe('keys are scoped to the caller', () => {
  it('two callers with the same key get two payments; each replays their own', async () => {
    const key = newKey();
    const a = await pay(t.base, key, { amount: 5 }, AS.user(21));
    const b = await pay(t.base, key, { amount: 6 }, AS.user(22));
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body!.data.id).not.toBe(b.body!.data.id);
    expect((await pay(t.base, key, { amount: 5 }, AS.user(21))).text).toBe(a.text);
    expect((await pay(t.base, key, { amount: 6 }, AS.user(22))).text).toBe(b.text);
    expect((await paymentRows(t.db, key)).map((r) => r.user_id)).toEqual([21, 22]);
  });

  it('an API key acts as its owner: the owner’s key space', async () => {
    const key = newKey();
    const viaToken = await pay(t.base, key, { amount: 3 }, AS.user(23));
    const viaApiKey = await pay(t.base, key, { amount: 3 }, AS.key(23, 'payments:write'));
    expect(viaApiKey.text).toBe(viaToken.text);
    expect(viaApiKey.headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('the same key with another request', () => {
  it('422 when the first is completed, and nothing is charged', async () => {
    const key = newKey();
    await pay(t.base, key, { amount: 10 });
    const before = processor().charged;
    for (const body of [{ amount: 11 }, { amount: 10, note: 'x' }]) {
      const res = await pay(t.base, key, body);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ error: 'Idempotency-Key reused with a different request' });
    }
    expect(processor().charged).toBe(before);
    expect(await paymentRows(t.db, key)).toHaveLength(1);
  });

  it('422 while the first is in progress too (the lock remembers its request)', async () => {
    const key = newKey();
    processor().settings.latencyMs = 400;
    try {
      const first = pay(t.base, key, { amount: 10 });
      await sleep(100);
      const other = await pay(t.base, key, { amount: 99 });
      expect(other.status).toBe(422);
      expect((await first).status).toBe(201);
    } finally {
      processor().settings.latencyMs = 0;
    }
  });
});

describe('400 before anything is locked or charged', () => {
  it.each([
    ['no header', null, 'Idempotency-Key required'],
    ['an empty header', '', 'Idempotency-Key required'],
    ['a blank header', '   ', 'Idempotency-Key required'],
    ['256 characters', 'k'.repeat(256), 'Idempotency-Key must be at most 255 characters'],
  ])('%s → 400 with its message', async (_what, key, message) => {
    const res = await pay(t.base, key, { amount: 10 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it('two keys folded into one line (`k1, k2`) → the same 400 as two lines, nothing charged', async () => {
    const [k1, k2] = [newKey(), newKey()];
    for (const folded of [`${k1}, ${k2}`, `${k1},${k2}`]) {
      const res = await pay(t.base, folded, { amount: 10 });
      expect([res.status, res.body]).toEqual([400, { error: 'Idempotency-Key must be sent once' }]);
      expect(await paymentRows(t.db, folded)).toEqual([]);
    }
    const twoLines = new Headers({ ...AS.user(7), 'content-type': 'application/json' });
    twoLines.append('idempotency-key', k1);
    twoLines.append('idempotency-key', k2);
    const res = await fetch(`${t.base}/api/payments`, { method: 'POST', headers: twoLines, body: '{"amount":10}' });
    expect([res.status, await res.json()]).toEqual([400, { error: 'Idempotency-Key must be sent once' }]);
    expect([...(await paymentRows(t.db, k1)), ...(await paymentRows(t.db, k2))]).toEqual([]);
  });

  it('a key of exactly 255 characters is fine', async () => {
    expect((await pay(t.base, `${newKey()}${'k'.repeat(219)}`, { amount: 1 })).status).toBe(201);
  });

  it.each([
    [{}, 'amount is required'],
    [{ amount: null }, 'amount is required'],
    [{ amount: '10' }, 'amount must be a positive number with at most 2 decimals'],
    [{ amount: 0 }, 'amount must be a positive number with at most 2 decimals'],
    [{ amount: -5 }, 'amount must be a positive number with at most 2 decimals'],
    [{ amount: 10.999 }, 'amount must be a positive number with at most 2 decimals'],
    [{ amount: 0.1 + 0.2 }, 'amount must be a positive number with at most 2 decimals'],
    [{ amount: true }, 'amount must be a positive number with at most 2 decimals'],
    [{ amount: 10_000_000_000 }, 'amount must be at most 9999999999.99'],
    [[], 'amount is required'],
    ['"text"', 'amount is required'],
  ])('%j → 400 %s', async (body, message) => {
    const key = newKey();
    const res = await pay(t.base, key, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
    // The key was never taken: the corrected request runs at once.
    expect((await pay(t.base, key, { amount: 1 })).status).toBe(201);
  });

  /** `{"amount":1,"x":[[…]]}`: the body object plus `arrays` levels below it. */
  const nested = (arrays: number) => `{"amount":1,"x":${'['.repeat(arrays)}${']'.repeat(arrays)}}`;

  it('a body nested thousands of levels deep → 400 with the contract’s shape, the key not taken', async () => {
    const key = newKey();
    const res = await pay(t.base, key, nested(2350));
    expect([res.status, res.body]).toEqual([400, { error: 'JSON nested deeper than 64 levels' }]);
    expect((await pay(t.base, key, { amount: 1 })).status).toBe(201);
  });

  it('64 levels are fine, 65 are not', async () => {
    expect((await pay(t.base, newKey(), nested(63))).status).toBe(201);
    expect((await pay(t.base, newKey(), nested(64))).body).toEqual({ error: 'JSON nested deeper than 64 levels' });
  });

  it('the largest and smallest amounts are exact', async () => {
    for (const amount of [9_999_999_999.99, 0.01, 19.99]) {
      const res = await pay(t.base, newKey(), { amount });
      expect(res.body!.data.amount).toBe(amount);
    }
  });

  it('malformed JSON → 400 Invalid JSON', async () => {
    const res = await pay(t.base, newKey(), '{"amount":');
    expect(res.body).toEqual({ error: 'Invalid JSON' });
  });
});

describe('who may pay: 401, then 403, before the key and the body', () => {
  it('no token → 401 Token required; a bad one → 401 Invalid token (even without a key or body)', async () => {
    expect((await pay(t.base, null, {}, {})).body).toEqual({ error: 'Token required' });
    expect((await pay(t.base, null, {}, AS.badToken())).body).toEqual({ error: 'Invalid token' });
  });

  it('an API key without payments:write → 403 Forbidden; with it → 201', async () => {
    const res = await pay(t.base, null, {}, AS.key(30, 'profile:read'));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'Forbidden' });
    expect((await pay(t.base, newKey(), { amount: 2 }, AS.key(30, 'catalog:write payments:write'))).status).toBe(201);
  });

  it('other methods → 405 with Allow', async () => {
    const res = await call(t.base, 'PUT', '/api/payments', { headers: AS.user(7) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});

describe('faults', () => {
  it('processor failure → 503, the lock is gone and nothing is stored; the retry charges once', async () => {
    const key = newKey();
    await flushNamespace(redis, t.db);
    processor().settings.failureRate = 1;
    const before = processor().charged;
    try {
      const failed = await pay(t.base, key, { amount: 77 });
      expect(failed.status).toBe(503);
      expect(failed.body).toEqual({ error: 'Payment processor unavailable' });
      expect(await namespaceKeys(redis, t.db)).toEqual([]);
      expect(await paymentRows(t.db, key)).toEqual([]);
    } finally {
      processor().settings.failureRate = 0;
    }
    const retry = await pay(t.base, key, { amount: 77 });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(processor().charged - before).toBe(1);
    expect(await paymentRows(t.db, key)).toHaveLength(1);
  });

  it('a processor past its deadline → 503, withdrawn; the retry gets the SAME charge from the processor (its key)', async () => {
    const key = newKey();
    const slow = await startTestPaymentsReplica({ PAYMENTS_PROCESSOR_TIMEOUT_MS: '100', PAYMENTS_PROCESSOR_LATENCY_MS: '300' });
    try {
      const timedOut = await pay(slow.base, key, { amount: 8 });
      expect(timedOut.status).toBe(503);
      expect(await paymentRows(t.db, key)).toEqual([]);
      await sleep(350); // the simulated processor finished that charge after Halo gave up on it
      const proc = slow.service.domain.processor;
      expect(proc.charged).toBe(1);
      proc.settings.latencyMs = 0;
      const retry = await pay(slow.base, key, { amount: 8 });
      expect(retry.status).toBe(201);
      // The processor saw the same key twice and charged once: the key is what makes a retry safe.
      expect(proc.keysSeen).toHaveLength(2);
      expect(new Set(proc.keysSeen).size).toBe(1);
      expect(proc.charged).toBe(1);
    } finally {
      await slow.stop();
    }
  });

  it('a lock pre-set with a short TTL → 409 processing with Retry-After until it expires, then success (real waits)', async () => {
    const key = newKey();
    // What another replica's request would hold: its token and this very request's fingerprint.
    const store = t.service.domain.store as RedisIdempotencyStore;
    const lockKey = store.keys(`7:${sha256Hex(key)}`).lock;
    await redis.set(lockKey, `deadbeef:${requestFingerprint('POST', '/api/payments', { amount: 12 })}`, 'PX', 2000);

    const busy = await pay(t.base, key, { amount: 12 });
    expect(busy.status).toBe(409);
    expect(busy.body).toEqual({ error: 'Request in progress', status: 'processing' });
    // Whole seconds left on the lock, rounded up: 2 right after it was set.
    expect(busy.headers.get('retry-after')).toMatch(/^[12]$/);
    // Later, with well under a second (but some margin) left: still refused, Retry-After 1.
    while ((await redis.pttl(lockKey)) > 900) await sleep(25);
    const still = await pay(t.base, key, { amount: 12 });
    expect(still.status).toBe(409);
    expect(still.headers.get('retry-after')).toBe('1');
    expect(await paymentRows(t.db, key)).toEqual([]);

    while ((await redis.pttl(lockKey)) > 0) await sleep(25);
    const done = await pay(t.base, key, { amount: 12 });
    expect(done.status).toBe(201);
    expect(await paymentRows(t.db, key)).toHaveLength(1);
  });

  it('a processor slower than the lock TTL → still one payment: the database fence answers the second request', async () => {
    const key = newKey();
    const slow = await startTestPaymentsReplica({ PAYMENTS_IDEMPOTENCY_LOCK_MS: '200', PAYMENTS_PROCESSOR_LATENCY_MS: '700' });
    try {
      const first = pay(slow.base, key, { amount: 31 });
      // Until the first request's lock has expired: it is still charging (700 ms) when it does.
      const lockKey = (slow.service.domain.store as RedisIdempotencyStore).keys(`7:${sha256Hex(key)}`).lock;
      while (!(await redis.exists(lockKey))) await sleep(10);
      while (await redis.exists(lockKey)) await sleep(10);
      const second = await pay(slow.base, key, { amount: 31 });
      expect(second.status).toBe(409);
      expect(second.body).toEqual({ error: 'Request in progress', status: 'processing' });
      expect(second.headers.get('retry-after')).toBe('1');
      const firstDone = await first;
      expect(firstDone.status).toBe(201);
      const third = await pay(slow.base, key, { amount: 31 });
      expect(third.text).toBe(firstDone.text);
      expect(third.headers.get('idempotent-replayed')).toBe('true');
      expect(slow.service.domain.processor.charged).toBe(1);
      expect(await paymentRows(t.db, key)).toHaveLength(1);
    } finally {
      await slow.stop();
    }
  });

  it('Redis flushed between attempts → still one payment: the retry replays the same bytes from the database', async () => {
    const key = newKey();
    const before = processor().charged;
    const first = await pay(t.base, key, { amount: 64 });
    expect(await flushNamespace(redis, t.db)).toBeGreaterThan(0);
    const again = await pay(t.base, key, { amount: 64 });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // …and stored again, so the next retry is answered by Redis alone.
    expect(await namespaceKeys(redis, t.db)).toHaveLength(1);
    expect((await pay(t.base, key, { amount: 64 })).text).toBe(first.text);
    // The database still knows the request: another body is refused even with Redis emptied.
    await flushNamespace(redis, t.db);
    expect((await pay(t.base, key, { amount: 65 })).status).toBe(422);
    expect(processor().charged - before).toBe(1);
    expect(await paymentRows(t.db, key)).toHaveLength(1);
  });

  it('a payment left pending by a request that died is taken over by the retry: charged once, under the same processor key', async () => {
    const key = newKey();
    // A crash after the INSERT: pending for longer than processor deadline + lock (10 s + 30 s).
    await t.db.query(
      `INSERT INTO payments (user_id, idempotency_key, request_hash, amount, currency, status, created_at, updated_at)
       VALUES (7, $1, $2, 9.5, 'USD', 'pending', now() - interval '2 minutes', now() - interval '2 minutes')`,
      [key, requestFingerprint('POST', '/api/payments', { amount: 9.5 })],
    );
    const before = processor().charged;
    const res = await pay(t.base, key, { amount: 9.5 });
    expect(res.status).toBe(201);
    expect(res.body!.data).toMatchObject({ amount: 9.5, status: 'succeeded' });
    expect(processor().charged - before).toBe(1);
    expect(await paymentRows(t.db, key)).toEqual([{ id: res.body!.data.id, user_id: 7, status: 'succeeded' }]);
  });

  it('a payment pending for less than that is a request still running: 409', async () => {
    const key = newKey();
    await t.db.query(
      `INSERT INTO payments (user_id, idempotency_key, request_hash, amount, currency, status) VALUES (7, $1, $2, 9.5, 'USD', 'pending')`,
      [key, requestFingerprint('POST', '/api/payments', { amount: 9.5 })],
    );
    const res = await pay(t.base, key, { amount: 9.5 });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'Request in progress', status: 'processing' });
  });
});

describe('readiness', () => {
  it('/readyz pings Redis', async () => {
    expect((await fetch(`${t.base}/readyz`)).status).toBe(200);
  });
});

/** A replica on this file's schema and Redis namespace, with settings of its own. */
const startTestPaymentsReplica = (extra: Record<string, string>) => startReplica(t, { REDIS_URL: TEST_REDIS_URL, ...extra });
