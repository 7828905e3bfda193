import { randomUUID } from 'node:crypto';
import { openRedis, redisReady, type Redis } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { metricValue } from '@halo/kit/testing';
import { gql, startE2ESystem } from './helpers';

/**
 * Payments and orders through the gateway's single port: the real processes on the real Postgres
 * (throwaway schemas) with payments' idempotency store in the real Redis (its own namespace), a
 * seeded user's Bearer token and an admin's API keys, and orders checked with catalog over gRPC
 * with the launcher's service keys.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;
let redis: Redis;
let alice: { token: string; id: number };
let bob: { token: string; id: number };
let admin: string;

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as Record<string, any>) : null }; // any: asserted per test
}

async function login(email: string, password: string) {
  const res = await send('POST', '/auth/login', { email, password });
  expect(res.status).toBe(200);
  return { token: res.body!.token as string, id: res.body!.user.id as number };
}

const asUser = (u: { token: string }) => ({ authorization: `Bearer ${u.token}` });
const pay = (key: string, body: unknown, headers: Record<string, string>) =>
  send('POST', '/api/payments', body, { ...headers, 'idempotency-key': key });

async function apiKey(scopes: string[]): Promise<string> {
  const res = await send('POST', '/auth/api-keys', { name: `e2e ${scopes.join(' ')}`, scopes }, { authorization: `Bearer ${admin}` });
  expect(res.status).toBe(201);
  return res.body!.data.key as string;
}

beforeAll(async () => {
  sys = await startE2ESystem({
    postgres: true,
    // Slow enough that two requests with one key really overlap.
    envFor: { payments: { REDIS_URL, PAYMENTS_PROCESSOR_LATENCY_MS: '300' } },
  });
  url = sys.url;
  redis = openRedis(REDIS_URL, createLogger('e2e', 'silent'), { enableOfflineQueue: true });
  await redisReady(redis);
  alice = await login('alice@halo.local', 'password123');
  bob = await login('bob@halo.local', 'password123');
  admin = (await login('admin@halo.local', 'admin-password')).token;
}, 90_000);

afterAll(async () => {
  if (redis && sys) {
    // This system's namespace only: other test files share the Redis.
    const keys = await redis.keys(`halo:${sys.schemas.payments}:*`);
    if (keys.length) await redis.del(...keys);
  }
  redis?.disconnect();
  await sys?.stop();
});

describe('POST /api/payments through the gateway', () => {
  it('201, then the same bytes with Idempotent-Replayed: true; a concurrent duplicate is 409 with Retry-After', async () => {
    const key = randomUUID();
    // Two at once (the processor takes 300 ms): whichever takes the key first is charged.
    const both = await Promise.all([pay(key, { amount: 49.9 }, asUser(alice)), pay(key, { amount: 49.9 }, asUser(alice))]);
    const first = both.find((r) => r.status === 201)!;
    const concurrent = both.find((r) => r !== first)!;
    expect(first.status).toBe(201);
    expect(first.body!.data).toMatchObject({ amount: 49.9, currency: 'USD', status: 'succeeded' });
    expect(first.headers.get('x-request-id')).toBeTruthy();
    expect(concurrent.status).toBe(409);
    expect(concurrent.body).toEqual({ error: 'Request in progress', status: 'processing' });
    expect(concurrent.headers.get('retry-after')).toMatch(/^\d+$/);

    const replay = await pay(key, { amount: 49.9 }, asUser(alice));
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await pay(key, { amount: 50 }, asUser(alice))).status).toBe(422);

    const own = await send('GET', `/api/payments/${first.body!.data.id}`, undefined, asUser(alice));
    expect(own.body).toEqual(first.body);
    expect((await send('GET', `/api/payments/${first.body!.data.id}`, undefined, asUser(bob))).status).toBe(404);
  });

  it('the gateway answers 401 without a caller; 400 without a key', async () => {
    const anonymous = await send('POST', '/api/payments', { amount: 1 }, { 'idempotency-key': randomUUID() });
    expect([anonymous.status, anonymous.body]).toEqual([401, { error: 'Token required' }]);
    const noKey = await send('POST', '/api/payments', { amount: 1 }, asUser(alice));
    expect([noKey.status, noKey.body]).toEqual([400, { error: 'Idempotency-Key required' }]);
  });

  it('an API key with payments:write pays (as its owner); one without it is 403', async () => {
    const writer = await apiKey(['payments:write']);
    const res = await pay(randomUUID(), { amount: 5 }, { 'x-api-key': writer });
    expect(res.status).toBe(201);
    const reader = await apiKey(['profile:read']);
    const refused = await pay(randomUUID(), { amount: 5 }, { 'x-api-key': reader });
    expect([refused.status, refused.body]).toEqual([403, { error: 'Forbidden' }]);
    expect((await send('POST', '/api/orders', { product_id: 1, client_order_id: 'by-reader' }, { 'x-api-key': reader })).status).toBe(403);
  });

  it('the idempotency record lives in Redis under this deployment’s namespace', async () => {
    await pay(randomUUID(), { amount: 2 }, asUser(bob));
    expect((await redis.keys(`halo:${sys.schemas.payments}:idem:{${bob.id}:*}:done`)).length).toBeGreaterThan(0);
  });
});

describe('orders through the gateway (catalog asked over gRPC with the launcher’s service keys)', () => {
  it('201 then 200 with the same order; unknown product 404; another user’s order 404; listed newest first', async () => {
    const body = { product_id: 1, client_order_id: `e2e-${randomUUID()}` };
    const created = await send('POST', '/api/orders', body, asUser(alice));
    expect(created.status).toBe(201);
    expect(created.body!.data).toMatchObject({ user_id: alice.id, product_id: 1, client_order_id: body.client_order_id });
    const again = await send('POST', '/api/orders', body, asUser(alice));
    expect([again.status, again.body]).toEqual([200, created.body]);

    const unknown = await send('POST', '/api/orders', { product_id: 99_999, client_order_id: 'nope' }, asUser(alice));
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'Product not found' }]);
    const tooLong = await send('POST', '/api/orders', { product_id: 1, client_order_id: 'x'.repeat(101) }, asUser(alice));
    expect([tooLong.status, tooLong.body]).toEqual([400, { error: 'client_order_id must be at most 100 characters' }]);

    const id = created.body!.data.id as number;
    expect((await send('GET', `/api/orders/${id}`, undefined, asUser(bob))).status).toBe(404);
    expect((await send('GET', `/api/orders/${id}`, undefined, asUser(alice))).body).toEqual(created.body);
    const list = await send('GET', '/api/orders', undefined, asUser(alice));
    expect(list.body!.data[0]).toEqual(created.body!.data);
  });

  it('20 parallel identical requests → one 201 and nineteen 200 with the same id', async () => {
    const body = { product_id: 2, client_order_id: `e2e-parallel-${randomUUID()}` };
    const answers = await Promise.all(Array.from({ length: 20 }, () => send('POST', '/api/orders', body, asUser(bob))));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(19);
    expect(new Set(answers.map((a) => a.body!.data.id)).size).toBe(1);
  });
});

describe('GraphQL through the gateway', () => {
  it('me { orders { product user } } crosses auth, payments, catalog and content', async () => {
    await send('POST', '/api/orders', { product_id: 3, client_order_id: `gql-${randomUUID()}` }, asUser(bob));
    const res = await gql(url, '{ me { name orders { clientOrderId product { id name price } user { name } } } }', undefined, asUser(bob));
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const me = res.body.data.me as { name: string; orders: { product: { name: string }; user: { name: string } }[] };
    expect(me.name).toBe('Bob');
    expect(me.orders.length).toBeGreaterThan(0);
    for (const o of me.orders) {
      expect(o.user.name).toBe('Bob');
      expect(o.product.name).toEqual(expect.any(String));
    }
  });

  it('createPayment over GraphQL shares REST’s key: the REST call with that key replays it', async () => {
    const key = randomUUID();
    const m = await gql(
      url,
      'mutation ($k: String!) { createPayment(amount: 7.25, idempotencyKey: $k) { id amount status } }',
      { k: key },
      asUser(alice),
    );
    expect(m.body.errors).toBeUndefined();
    const rest = await pay(key, { amount: 7.25 }, asUser(alice));
    expect(rest.headers.get('idempotent-replayed')).toBe('true');
    expect(String(rest.body!.data.id)).toBe(m.body.data.createPayment.id);
  });
});

describe('metrics (Prometheus, as a scraper reads them)', () => {
  const scrape = async (at: string) => {
    const res = await fetch(at);
    expect(res.status).toBe(200);
    return res.text();
  };

  it('the gateway, on its metrics port only: routes by template, GraphQL operations, its gRPC calls to auth', async () => {
    expect((await send('GET', '/metrics')).status).toBe(404);
    const text = await scrape(sys.gatewayMetricsUrl);
    const requests = (labels: Record<string, string>) =>
      metricValue(text, 'halo_http_request_duration_seconds_count', { service: 'gateway', ...labels });
    expect(requests({ method: 'POST', route: '/api/payments', status: '201' })).toBeGreaterThanOrEqual(2);
    expect(requests({ method: 'POST', route: '/api/orders', status: '201' })).toBeGreaterThanOrEqual(1);
    expect(requests({ method: 'POST', route: '/graphql', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(requests({ route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'halo_proxy_upstream_duration_seconds_count', { service: 'payments', status: '201' })).toBeGreaterThanOrEqual(
      2,
    );
    expect(
      metricValue(text, 'halo_graphql_operation_duration_seconds_count', { operation_type: 'mutation', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);
    // X-API-Key callers: the gateway asked auth over gRPC to exchange the key.
    expect(
      metricValue(text, 'halo_grpc_client_handling_seconds_count', {
        peer: 'auth',
        method: 'halo.auth.v1.ApiKeyService/ExchangeApiKey',
        code: 'OK',
      }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('each service on its HTTP port: payments’ idempotency outcomes and its calls to catalog; auth’s calls to content', async () => {
    const payments = await scrape(`${sys.direct('payments')}/metrics`);
    const outcome = (o: string) => metricValue(payments, 'halo_idempotency_outcomes_total', { service: 'payments', outcome: o });
    expect(outcome('first')).toBeGreaterThanOrEqual(2);
    expect(outcome('replay')).toBeGreaterThanOrEqual(1);
    expect(outcome('in_progress')).toBeGreaterThanOrEqual(1);
    expect(metricValue(payments, 'halo_grpc_client_handling_seconds_count', { peer: 'catalog', code: 'OK' })).toBeGreaterThanOrEqual(1);
    const auth = await scrape(`${sys.direct('auth')}/metrics`);
    expect(
      metricValue(auth, 'halo_grpc_client_handling_seconds_count', { service: 'auth', peer: 'content', code: 'OK' }),
    ).toBeGreaterThanOrEqual(1);
    const catalog = await scrape(`${sys.direct('catalog')}/metrics`);
    expect(metricValue(catalog, 'halo_grpc_server_handling_seconds_count', { service: 'catalog', code: 'OK' })).toBeGreaterThanOrEqual(1);
  });
});
