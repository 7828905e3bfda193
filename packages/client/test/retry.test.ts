import { createHaloClient, HaloApiError, HaloNetworkError, type HaloClientOptions } from '../src';
import { json, recordingSleep, startServer, UUID_V4, type Handler, type TestServer } from './servers';

/**
 * The contract's retry rules (docs/api/resources.md "Client retry guidance") against real local
 * HTTP servers that fail on purpose. The waits are recorded by an injected sleep, so the 1-2-4 s
 * schedule is checked exactly without waiting for it.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(handler: Handler, opts: HaloClientOptions = {}) {
  server = await startServer(handler);
  const rec = recordingSleep();
  const client = createHaloClient({ baseUrl: server.url, sleep: rec.sleep, accessToken: 'tok', ...opts });
  return { client, waits: rec.waits, seen: server.seen };
}

describe('which answers are retried', () => {
  it('retries a GET that keeps failing with 500 three times, waiting 1, 2, 4 s, then surfaces the error', async () => {
    const { client, waits, seen } = await setup((_req, res) =>
      json(res, 500, { error: 'Internal server error' }, { 'x-request-id': 'rid-1' }),
    );
    const err = await client.products.get(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloApiError);
    expect(err).toMatchObject({
      status: 500,
      message: 'Internal server error',
      requestId: 'rid-1',
      body: { error: 'Internal server error' },
      method: 'GET',
    });
    expect(seen).toHaveLength(4);
    expect(waits).toEqual([1000, 2000, 4000]);
  });

  it('spaces real attempts by the schedule (scaled down by configuration)', async () => {
    const { client, seen } = await setup((_req, res) => json(res, 502, { error: 'Bad gateway' }), {
      sleep: undefined,
      retry: { delaysMs: [40, 80, 160] },
    });
    await expect(client.content.hello()).rejects.toBeInstanceOf(HaloApiError);
    expect(seen).toHaveLength(4);
    const gaps = seen.slice(1).map((s, i) => s.at - seen[i]!.at);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual([40, 80, 160][i]! - 5));
    expect(gaps[2]).toBeLessThan(1000);
  });

  it('stops at the first success', async () => {
    const { client, waits, seen } = await setup((_req, res, _b, n) =>
      n === 1
        ? json(res, 503, { error: 'Service unavailable' })
        : n === 2
          ? json(res, 504, { error: 'Gateway timeout' })
          : json(res, 200, { message: 'Halo Dunia!' }),
    );
    await expect(client.content.hello()).resolves.toEqual({ message: 'Halo Dunia!' });
    expect(seen).toHaveLength(3);
    expect(waits).toEqual([1000, 2000]);
  });

  it('retries network failures (connection reset without an answer) the same way', async () => {
    const { client, waits, seen } = await setup((req) => void req.socket.destroy());
    const err = await client.orders.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloNetworkError);
    expect(err).toMatchObject({ method: 'GET', attempts: 4 });
    expect(seen).toHaveLength(4);
    expect(waits).toEqual([1000, 2000, 4000]);
  });

  it('retries a refused connection (nothing listening)', async () => {
    const s = await startServer(() => undefined);
    await s.close();
    const rec = recordingSleep();
    const client = createHaloClient({ baseUrl: s.url, sleep: rec.sleep });
    await expect(client.content.hello()).rejects.toMatchObject({ name: 'HaloNetworkError', attempts: 4 });
    expect(rec.waits).toEqual([1000, 2000, 4000]);
  });

  it.each([400, 401, 403, 404, 405, 409, 413, 422, 429])('never retries %i', async (status) => {
    // No token: a 401 is then just an answer (renewal after a 401 is test/auth.test.ts's).
    const { client, waits, seen } = await setup((_req, res) => json(res, status, { error: `status ${status}` }, { 'retry-after': '1' }), {
      accessToken: null,
    });
    const err = await client.auth.apiKeys.list().catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'HaloApiError', status, message: `status ${status}` });
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('reports Retry-After of a 429 for the caller to decide, without waiting for it', async () => {
    const { client, waits } = await setup((_req, res) => json(res, 429, { error: 'Too many attempts' }, { 'retry-after': '120' }));
    const err = (await client.auth.login({ email: 'a@b.c', password: 'x' }).catch((e: unknown) => e)) as HaloApiError;
    expect(err).toMatchObject({ status: 429, message: 'Too many attempts', retryAfterMs: 120_000 });
    expect(waits).toEqual([]);
  });

  it('never retries a POST without an Idempotency-Key', async () => {
    const { client, waits, seen } = await setup((_req, res) => json(res, 500, { error: 'Internal server error' }));
    await expect(client.content.greet('Budi')).rejects.toMatchObject({ status: 500 });
    await expect(client.products.create({ name: 'n', category: 'c', price: 1 })).rejects.toMatchObject({ status: 500 });
    await expect(client.graphql.mutate('mutation { createUser(name: "a", email: "b") { id } }')).rejects.toMatchObject({ status: 500 });
    expect(seen).toHaveLength(3);
    expect(waits).toEqual([]);
  });

  it('never retries a POST without a key after a network failure either', async () => {
    const { client, seen } = await setup((req) => void req.socket.destroy());
    await expect(client.content.greet('Budi')).rejects.toMatchObject({ name: 'HaloNetworkError', attempts: 1 });
    expect(seen).toHaveLength(1);
  });

  it('retries PUT and DELETE (idempotent methods)', async () => {
    const { client, seen } = await setup((req, res, _b, n) =>
      n % 2 === 1
        ? json(res, 503, { error: 'Service unavailable' })
        : req.method === 'DELETE'
          ? json(res, 204, undefined)
          : json(res, 200, { data: { id: 1, name: 'x' } }),
    );
    await expect(client.products.update(1, { name: 'x' })).resolves.toMatchObject({ id: 1 });
    await expect(client.productsV2.delete(1)).resolves.toBeUndefined();
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'PUT /products/1',
      'PUT /products/1',
      'DELETE /api/v2/products/1',
      'DELETE /api/v2/products/1',
    ]);
  });

  it('retries an order (idempotent by its client_order_id) with the same client_order_id', async () => {
    const { client, seen } = await setup((_req, res, body, n) =>
      n < 3 ? json(res, 503, { error: 'Service unavailable' }) : json(res, 201, { data: { id: 7, ...(JSON.parse(body) as object) } }),
    );
    const { order, created } = await client.orders.create({ product_id: 3 });
    expect(created).toBe(true);
    expect(order.client_order_id).toMatch(UUID_V4);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.body)).size).toBe(1);
  });

  it('retries GraphQL queries (idempotent calls) but not mutations', async () => {
    const { client, seen } = await setup((_req, res, _b, n) =>
      n === 1 ? json(res, 502, { error: 'Bad gateway' }) : json(res, 200, { data: { hello: 'hi' } }),
    );
    await expect(client.graphql.query('{ hello }', undefined, { persisted: false })).resolves.toEqual({ hello: 'hi' });
    expect(seen).toHaveLength(2);
  });
});

describe('payments: one Idempotency-Key per logical payment', () => {
  it('retries a POST with an Idempotency-Key, sending the SAME key every attempt', async () => {
    const { client, waits, seen } = await setup((_req, res, _b, n) =>
      n < 4
        ? json(res, n === 2 ? 500 : 503, { error: 'Payment processor unavailable' })
        : json(res, 201, { data: { id: 1, amount: 25.5, currency: 'USD', status: 'succeeded', created_at: 'x' } }),
    );
    const result = await client.payments.create({ amount: 25.5 });
    expect(seen).toHaveLength(4);
    const keys = seen.map((s) => s.headers['idempotency-key']);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(UUID_V4);
    expect(result).toMatchObject({ idempotencyKey: keys[0], replayed: false, payment: { id: 1 } });
    expect(seen.every((s) => s.body === '{"amount":25.5}')).toBe(true);
    expect(waits).toEqual([1000, 2000, 4000]);
  });

  it('gives each logical payment its own key, and reuses a key it is given', async () => {
    const { client, seen } = await setup((_req, res) =>
      json(
        res,
        201,
        { data: { id: 1, amount: 1, currency: 'USD', status: 'succeeded', created_at: 'x' } },
        { 'idempotent-replayed': 'true' },
      ),
    );
    await client.payments.create({ amount: 1 });
    await client.payments.create({ amount: 1 });
    const resumed = await client.payments.create({ amount: 1 }, { idempotencyKey: 'my-key' });
    const keys = seen.map((s) => s.headers['idempotency-key']);
    expect(keys[0]).not.toEqual(keys[1]);
    expect(keys[2]).toBe('my-key');
    expect(resumed.replayed).toBe(true);
  });

  it('after the retries are spent, the error names the key to resume the payment with', async () => {
    const { client, seen } = await setup((req) => void req.socket.destroy());
    const err = (await client.payments.create({ amount: 5 }).catch((e: unknown) => e)) as HaloNetworkError;
    expect(err).toBeInstanceOf(HaloNetworkError);
    expect(err.idempotencyKey).toBe(seen[0]!.headers['idempotency-key']);
    expect(err.attempts).toBe(4);
  });

  it('waits out 409 "Request in progress" for its Retry-After, then gets the first answer (same key)', async () => {
    const payment = { id: 9, amount: 3, currency: 'USD', status: 'succeeded', created_at: 'x' };
    const { client, waits, seen } = await setup((_req, res, _b, n) =>
      n === 1
        ? json(res, 409, { error: 'Request in progress', status: 'processing' }, { 'retry-after': '2' })
        : json(res, 201, { data: payment }, { 'idempotent-replayed': 'true' }),
    );
    const result = await client.payments.create({ amount: 3 });
    expect(result).toMatchObject({ payment, replayed: true });
    expect(waits).toEqual([2000]);
    expect(seen[0]!.headers['idempotency-key']).toBe(seen[1]!.headers['idempotency-key']);
  });

  it('with retryInProgress: false, surfaces the 409 with its Retry-After and key', async () => {
    const { client, waits, seen } = await setup(
      (_req, res) => json(res, 409, { error: 'Request in progress', status: 'processing' }, { 'retry-after': '2' }),
      { retry: { retryInProgress: false } },
    );
    const err = (await client.payments.create({ amount: 3 }).catch((e: unknown) => e)) as HaloApiError;
    expect(err).toMatchObject({ status: 409, message: 'Request in progress', retryAfterMs: 2000, body: { status: 'processing' } });
    expect(err.idempotencyKey).toBe(seen[0]!.headers['idempotency-key']);
    expect(waits).toEqual([]);
  });

  it('does not retry other 409s (e.g. Email already registered) or a 422 key reuse', async () => {
    const { client, seen } = await setup((req, res) =>
      req.url === '/auth/register'
        ? json(res, 409, { error: 'Email already registered' })
        : json(res, 422, { error: 'Idempotency-Key reused with a different request' }),
    );
    await expect(client.auth.register({ name: 'a', email: 'a@b.c', password: '12345678' })).rejects.toMatchObject({ status: 409 });
    await expect(client.payments.create({ amount: 1 })).rejects.toMatchObject({ status: 422 });
    expect(seen).toHaveLength(2);
  });
});

describe('Retry-After', () => {
  it('a 503 with Retry-After (seconds) waits that long instead of the backoff', async () => {
    const { client, waits } = await setup((_req, res, _b, n) =>
      n < 3 ? json(res, 503, { error: 'Service unavailable' }, { 'retry-after': n === 1 ? '7' : '0' }) : json(res, 200, { message: 'ok' }),
    );
    await client.content.hello();
    expect(waits).toEqual([7000, 0]);
  });

  it('a 503 with Retry-After as an HTTP-date, read against the injected clock', async () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const { client, waits } = await setup(
      (_req, res, _b, n) =>
        n === 1 ? json(res, 503, { error: 'x' }, { 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }) : json(res, 200, { message: 'ok' }),
      { now: () => now },
    );
    await client.content.hello();
    expect(waits).toEqual([5000]);
  });

  it('a Retry-After longer than maxRetryAfterMs is not waited for: the error surfaces with it', async () => {
    const { client, waits, seen } = await setup((_req, res) => json(res, 503, { error: 'Service unavailable' }, { 'retry-after': '3600' }));
    await expect(client.content.hello()).rejects.toMatchObject({ status: 503, retryAfterMs: 3_600_000 });
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('a 500 ignores Retry-After (only 503 defines it among 5xx)', async () => {
    const { client, waits } = await setup((_req, res) => json(res, 500, { error: 'x' }, { 'retry-after': '9' }));
    await expect(client.content.hello()).rejects.toMatchObject({ status: 500 });
    expect(waits).toEqual([1000, 2000, 4000]);
  });
});

describe('cancellation and deadlines', () => {
  it('an abort during a wait stops at once and rejects with an AbortError', async () => {
    const { client, seen } = await setup((_req, res) => json(res, 503, { error: 'Service unavailable' }), {
      sleep: undefined, // the real timers: a 60 s wait
      retry: { delaysMs: [60_000] },
    });
    const ctl = new AbortController();
    const started = Date.now();
    const pending = client.products.list({}, { signal: ctl.signal });
    const until = async () => {
      while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    };
    await until();
    await new Promise((r) => setTimeout(r, 50));
    ctl.abort();
    const err = await pending.catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(seen).toHaveLength(1);
  });

  it('an abort ends the wait even when an injected sleep never returns', async () => {
    const { client } = await setup((_req, res) => json(res, 500, { error: 'x' }), { sleep: () => new Promise<void>(() => undefined) });
    const ctl = new AbortController();
    const pending = client.content.hello({ signal: ctl.signal });
    setTimeout(() => ctl.abort(), 100);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('an abort during the request itself rejects with the signal reason and is not retried', async () => {
    const { client, seen } = await setup(() => undefined /* never answers */);
    const err = await client.content.hello({ signal: AbortSignal.timeout(100) }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('TimeoutError');
    expect(seen).toHaveLength(1);
  });

  it('an already aborted signal sends nothing', async () => {
    const { client, seen } = await setup((_req, res) => json(res, 200, {}));
    const ctl = new AbortController();
    ctl.abort();
    await expect(client.content.hello({ signal: ctl.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toHaveLength(0);
  });

  it('timeoutMs: an attempt without an answer in time counts as a network failure and is retried', async () => {
    const { client, waits, seen } = await setup(
      (_req, res, _b, n) => {
        if (n > 1) json(res, 200, { message: 'late but fine' }); // the first never answers
      },
      { timeoutMs: 150 },
    );
    await expect(client.content.hello()).resolves.toEqual({ message: 'late but fine' });
    expect(seen).toHaveLength(2);
    expect(waits).toEqual([1000]);
  });
});
